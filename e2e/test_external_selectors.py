"""An externalRef whose selector is an expression over the instance's spec (V-12), on the real
control plane: it selects the objects the instance's selector names, follows the spec when it
changes, and a selector of the wrong shape fails the reference (ResourcesReady=False naming
the expression, state not ACTIVE) instead of selecting every object, until it is fixed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kro_harness import CONFIGMAPS, FIELD_MANAGER, KroEnv, condition, kro_fixtures, state

controller, kro = kro_fixtures()

KIND = "PickedConfigs"
MEMBERS = {"db-a": "db", "db-b": "db", "web-a": "web"}


def _rgd(kro: KroEnv) -> dict[str, Any]:
    return kro.rgd(
        "picked",
        KIND,
        {"selector": "object"},
        [
            {
                "id": "picked",
                "externalRef": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "namespace": "${schema.metadata.namespace}",
                        "selector": "${schema.spec.selector}",
                    },
                },
            }
        ],
        status={"names": "${picked.map(c, c.metadata.name)}"},
    )


async def _members(kro: KroEnv) -> None:
    """Three ConfigMaps labelled by tier, plus one without the test's label."""
    for name, tier in {**MEMBERS, "stranger": "db"}.items():
        labels = {"tier": tier}
        if name != "stranger":
            labels["picked-by"] = kro.suffix
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": kro.namespace, "labels": labels},
        }
        await kro.client.apply(
            CONFIGMAPS, body, field_manager=FIELD_MANAGER, namespace=kro.namespace
        )


def _names(instance: Mapping[str, Any]) -> list[str] | None:
    if state(instance) != "ACTIVE" or condition(instance, "Ready").get("status") != "True":
        return None
    names = (instance.get("status") or {}).get("names")
    return sorted(names) if isinstance(names, list) else None


async def test_a_selector_expression_selects_what_the_instance_spec_names(kro: KroEnv) -> None:
    await _members(kro)
    rgd = _rgd(kro)
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])
    gvr = await kro.gvr_of(KIND)

    by_labels = {"matchLabels": {"tier": "db", "picked-by": kro.suffix}}
    await kro.apply_instance(KIND, "dbs", {"selector": by_labels})
    await kro.wait_instance(
        gvr, "dbs", lambda i: _names(i) == ["db-a", "db-b"], what="the two db ConfigMaps"
    )

    by_expression = {
        "matchLabels": {"picked-by": kro.suffix},
        "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}],
    }
    await kro.apply_instance(KIND, "dbs", {"selector": by_expression})
    await kro.wait_instance(
        gvr, "dbs", lambda i: _names(i) == ["web-a"], what="the selection follows the spec"
    )


async def test_a_selector_of_the_wrong_shape_fails_the_reference_until_fixed(
    kro: KroEnv,
) -> None:
    await _members(kro)
    rgd = _rgd(kro)
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])
    gvr = await kro.gvr_of(KIND)

    for name, selector, problem in (
        ("misspelled", {"matchLabel": {"tier": "db"}}, 'unknown field "matchLabel"'),
        ("bare", {"tier": "db"}, 'unknown field "tier"'),
    ):
        await kro.apply_instance(KIND, name, {"selector": selector})

        def refused(instance: Mapping[str, Any], problem: str = problem) -> bool:
            resources = condition(instance, "ResourcesReady")
            message = str(resources.get("message") or "")
            return (
                resources.get("status") == "False"
                and 'selector expression "schema.spec.selector"' in message
                and problem in message
            )

        live = await kro.wait_instance(gvr, name, refused, what=f"{name}: ResourcesReady=False")
        assert state(live) != "ACTIVE"
        assert condition(live, "Ready").get("status") != "True"
        assert "names" not in (live.get("status") or {})  # nothing was selected

    fixed = {"matchLabels": {"tier": "web", "picked-by": kro.suffix}}
    await kro.apply_instance(KIND, "bare", {"selector": fixed})
    await kro.wait_instance(gvr, "bare", lambda i: _names(i) == ["web-a"], what="recovers")
