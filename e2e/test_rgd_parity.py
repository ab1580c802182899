"""RGDs as upstream kro reports them, on the real control plane (issue 26: B1, B2, B4, A2, A3).

* An RGD whose graph does not build lists five conditions: GraphRevisionsResolved, KindReady
  and ControllerReady `Unknown` (`AwaitingReconciliation`), then `GraphAccepted=False` and
  `Ready=False` (`InvalidResourceGraph`), and is `Inactive`.
* A kind the API server cannot resolve is named: its group version when that is not served,
  the group version and kind when only the kind is missing.
* An unterminated `${` is a build error naming the expression (upstream v0.10).
* A status field copying a Deployment's conditions gives a CRD the API server accepts, with
  upstream's shape (no descriptions or `required`, timestamps preserve-unknown), and the RGD's
  own status, whose conditions are now a list map keyed on `type`, is written as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kro_harness import KroEnv, condition, kro_fixtures, meta, state, wait_for

from kro.api.names import RGD_CRD_NAME
from kro.controllers.crd import CRDS

controller, kro = kro_fixtures()

PLACEHOLDERS = ("GraphRevisionsResolved", "KindReady", "ControllerReady")


def _resource(api_version: str, kind: str, name: str = "${schema.spec.name}") -> dict[str, Any]:
    return {
        "id": "thing",
        "template": {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}},
    }


async def _rejected(kro: KroEnv, rgd: Mapping[str, Any]) -> dict[str, Any]:
    """Apply the RGD and wait until it reports GraphAccepted=False."""
    await kro.apply_rgd(rgd)
    name = str(meta(rgd)["name"])

    async def probe() -> dict[str, Any] | None:
        live = await kro.get_rgd(name)
        accepted = condition(live, "GraphAccepted")
        return live if accepted.get("status") == "False" and condition(live, "Ready") else None

    return await wait_for(probe, what=f"RGD {name} GraphAccepted=False")


def _assert_upstream_failure(live: Mapping[str, Any], message_part: str) -> None:
    conditions: Sequence[Mapping[str, Any]] = live["status"]["conditions"]
    assert [c["type"] for c in conditions] == [*PLACEHOLDERS, "GraphAccepted", "Ready"]
    for placeholder in conditions[:3]:
        assert placeholder["status"] == "Unknown", placeholder
        assert placeholder["reason"] == "AwaitingReconciliation", placeholder
        assert placeholder["message"] == (
            f'condition "{placeholder["type"]}" is awaiting reconciliation'
        )
    accepted, ready = conditions[3], conditions[4]
    assert (accepted["status"], accepted["reason"]) == ("False", "InvalidResourceGraph")
    assert (ready["status"], ready["reason"]) == ("False", "InvalidResourceGraph")
    assert message_part in accepted["message"], accepted["message"]
    assert ready["message"] == accepted["message"]
    assert state(live) == "Inactive"


async def test_a_missing_group_version_is_named_and_five_conditions_listed(kro: KroEnv) -> None:
    rgd = kro.rgd("vpcs", "Network", {"name": "string"},
                  [_resource("ec2.services.k8s.aws/v1alpha1", "VPC")])  # fmt: skip
    live = await _rejected(kro, rgd)
    _assert_upstream_failure(
        live,
        'failed to build resource "thing": failed to get schema for resource thing: '
        'cannot resolve group version "ec2.services.k8s.aws/v1alpha1": schema not found',
    )


async def test_a_missing_kind_of_a_served_group_version_is_named(kro: KroEnv) -> None:
    rgd = kro.rgd("vpc", "Subnet", {"name": "string"}, [_resource("kro.run/v1alpha1", "Vpc")])
    live = await _rejected(kro, rgd)
    _assert_upstream_failure(
        live, 'cannot resolve group version kind "kro.run/v1alpha1, Kind=Vpc": schema not found'
    )


async def test_an_unterminated_expression_makes_the_rgd_inactive(kro: KroEnv) -> None:
    rgd = kro.rgd("open", "Open", {"name": "string"},
                  [_resource("v1", "ConfigMap", name="${schema.spec.name")])  # fmt: skip
    live = await _rejected(kro, rgd)
    _assert_upstream_failure(live, 'unterminated expression "${schema.spec.name"')


async def test_copied_deployment_conditions_give_upstreams_crd_and_status_writes_work(
    kro: KroEnv,
) -> None:
    rgd_crd = await kro.client.get(CRDS, RGD_CRD_NAME)
    status = rgd_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    conditions_schema = status["properties"]["conditions"]
    assert conditions_schema["x-kubernetes-list-type"] == "map"
    assert conditions_schema["x-kubernetes-list-map-keys"] == ["type"]

    deployment = {
        "id": "deployment",
        "template": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "${schema.spec.name}"},
            "spec": {
                "selector": {"matchLabels": {"app": "${schema.spec.name}"}},
                "template": {
                    "metadata": {"labels": {"app": "${schema.spec.name}"}},
                    "spec": {"containers": [{"name": "web", "image": "nginx"}]},
                },
            },
        },
    }
    rgd = kro.rgd("conds", "Conds", {"name": "string"}, [deployment],
                  status={"deploymentConditions": "${deployment.status.conditions}"})  # fmt: skip
    await kro.apply_rgd(rgd)
    live = await kro.wait_rgd_active(str(meta(rgd)["name"]))
    conditions = {c["type"]: c for c in live["status"]["conditions"]}
    assert len(conditions) == len(live["status"]["conditions"]) == 5
    assert all(c["status"] == "True" for c in conditions.values()), conditions

    plural = (await kro.gvr_of("Conds")).resource
    crd = await kro.client.get(CRDS, f"{plural}.{kro.group}")
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    copied = schema["properties"]["status"]["properties"]["deploymentConditions"]
    preserve = {"x-kubernetes-preserve-unknown-fields": True}
    assert copied == {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "lastTransitionTime": preserve,
                "lastUpdateTime": preserve,
                "message": {"type": "string"},
                "reason": {"type": "string"},
                "status": {"type": "string"},
                "type": {"type": "string"},
            },
        },
    }
