"""`--cel-cost-limit` on the real control plane (V-10): an expression within the limit renders;
the same RGD with a spec that makes the expression cost more fails the instance with
ResourcesReady=False naming the expression and cel-go's words, and recovers once the spec
is small again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kro_harness import (
    CONFIGMAPS,
    CONTROLLER_ARGS,
    KroEnv,
    condition,
    is_ready,
    kro_fixtures,
    state,
)

controller, kro = kro_fixtures((*CONTROLLER_ARGS, "--cel-cost-limit=1000"))

KIND = "Doubled"
EXPRESSION = 'schema.spec.items.map(x, string(x * 2)).join(",")'


def _rgd(kro: KroEnv) -> dict[str, Any]:
    return kro.rgd(
        "doubled",
        KIND,
        {"items": "[]integer"},
        [
            {
                "id": "config",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}"},
                    "data": {"doubled": "${" + EXPRESSION + "}"},
                },
            }
        ],
    )


async def test_an_expression_over_the_cost_limit_fails_the_instance_naming_it(
    kro: KroEnv,
) -> None:
    rgd = _rgd(kro)
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])
    gvr = await kro.gvr_of(KIND)

    # cel-go's units: 15 outside the loop and 15 per item: 3 items cost 60, 100 cost 1515.
    await kro.apply_instance(KIND, "small", {"items": [1, 2, 3]})
    await kro.wait_instance(gvr, "small")
    assert (await kro.get(CONFIGMAPS, "small"))["data"]["doubled"] == "2,4,6"

    await kro.apply_instance(KIND, "large", {"items": list(range(100))})

    def refused(instance: Mapping[str, Any]) -> bool:
        resources = condition(instance, "ResourcesReady")
        message = str(resources.get("message") or "")
        return (
            resources.get("status") == "False"
            and f'"{EXPRESSION}"' in message
            and "operation cancelled: actual cost limit exceeded" in message
            and "the CEL cost limit is 1000" in message
        )

    live = await kro.wait_instance(gvr, "large", refused, what="ResourcesReady=False (cost)")
    assert state(live) != "ACTIVE"
    assert await kro.children(CONFIGMAPS, "large") == []

    await kro.apply_instance(KIND, "large", {"items": [5]})
    await kro.wait_instance(gvr, "large", is_ready, what="recovers within the limit")
    assert (await kro.get(CONFIGMAPS, "large"))["data"]["doubled"] == "10"
