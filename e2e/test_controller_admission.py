"""A write the API server refuses, on the real control plane.

A ValidatingAdmissionPolicy bound to this test's namespace denies ConfigMaps labelled
`e2e.kro.run/deny`. The instance must say so in its conditions (not only in the controller's
log), and converge by itself once the policy is gone.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from kro_harness import (
    CONFIGMAPS,
    KroEnv,
    condition,
    kro_fixtures,
    state,
    wait_for,
)

from kro.runtime.errors import ApiError, NotFound
from kro.runtime.gvk import GVR

POLICIES = GVR("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies")
BINDINGS = GVR("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings")
DENY_LABEL = "e2e.kro.run/deny"
MESSAGE = "ConfigMaps labelled e2e.kro.run/deny are not allowed here"


controller, kro = kro_fixtures()


def _policy(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["configmaps"],
                    }
                ]
            },
            "validations": [
                {
                    "expression": f"!has(object.metadata.labels) || "
                    f"!('{DENY_LABEL}' in object.metadata.labels)",
                    "message": MESSAGE,
                }
            ],
        },
    }


def _binding(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
            },
        },
    }


async def _is_denied(kro: KroEnv) -> bool:
    """Whether the policy is in force: a dry-run create of a labelled ConfigMap is refused."""
    probe = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "probe", "labels": {DENY_LABEL: "yes"}},
    }
    try:
        await kro.client.create(CONFIGMAPS, probe, namespace=kro.namespace, dry_run=True)
    except ApiError as error:
        return MESSAGE in str(error)
    return False


async def test_denied_write_surfaces_in_conditions_and_recovers(kro: KroEnv) -> None:
    name = f"kro-e2e-deny-{kro.suffix}"
    await kro.client.create(POLICIES, _policy(name))
    kro.track(POLICIES, name)
    await kro.client.create(BINDINGS, _binding(name, kro.namespace))
    kro.track(BINDINGS, name)
    await wait_for(lambda: _is_denied(kro), what="the policy in force")

    rgd = kro.rgd(
        "guarded",
        "Guarded",
        {"value": "string | default=x"},
        [
            {
                "id": "config",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}", "labels": {DENY_LABEL: "yes"}},
                    "data": {"v": "${schema.spec.value}"},
                },
            }
        ],
    )
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])
    await kro.apply_instance("Guarded", "guarded", {})
    gvr = await kro.gvr_of("Guarded")

    denied = await kro.wait_instance(
        gvr, "guarded", lambda o: state(o) == "ERROR", what="the instance in ERROR"
    )
    resources_ready = condition(denied, "ResourcesReady")
    assert resources_ready["status"] == "False"
    assert MESSAGE in resources_ready["message"]
    assert MESSAGE in condition(denied, "Ready")["message"]
    with pytest.raises(NotFound):
        await kro.get(CONFIGMAPS, "guarded")

    await kro.client.delete(BINDINGS, name)
    with contextlib.suppress(NotFound):
        await kro.client.delete(POLICIES, name)
    await kro.wait_instance(gvr, "guarded")
    assert (await kro.get(CONFIGMAPS, "guarded"))["data"] == {"v": "x"}
