"""--scenario three: a ConfigMap, a Deployment reading it, and a Service with the Deployment's
selector per instance. Its time to ACTIVE is set by kube-controller-manager and the fake nodes
(`readyWhen` waits for the Deployment's available replicas). With --fight the Deployment also
sets `deployment.kubernetes.io/revision`, which kube-controller-manager owns."""

from __future__ import annotations

import json
from typing import Any

from kro.runtime.gvk import GVR

from ..benchapp import benchapp_rgd
from ..rgd import RgdScenario


def rgd() -> dict[str, Any]:
    return benchapp_rgd(
        {"available": "${deployment.status.availableReplicas}"},
        [
            {
                "id": "config",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}"},
                    "data": {"message": "${schema.spec.message}"},
                },
            },
            {
                "id": "deployment",
                "readyWhen": ["${deployment.status.availableReplicas >= deployment.spec.replicas}"],
                "template": {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {
                        "name": "${schema.metadata.name}",
                        "annotations": {"config": "${config.metadata.name}"},
                    },
                    "spec": {
                        "replicas": "${schema.spec.replicas}",
                        "selector": {"matchLabels": {"app": "${schema.metadata.name}"}},
                        "template": {
                            "metadata": {"labels": {"app": "${schema.metadata.name}"}},
                            "spec": {"containers": [{"name": "app", "image": "nginx"}]},
                        },
                    },
                },
            },
            {
                "id": "service",
                "template": {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {"name": "${schema.metadata.name}"},
                    "spec": {
                        "selector": "${deployment.spec.selector.matchLabels}",
                        "ports": [{"port": 80}],
                    },
                },
            },
        ],
    )


def fighting_rgd() -> dict[str, Any]:
    """The RGD whose Deployment also sets `deployment.kubernetes.io/revision`, which
    kube-controller-manager owns and rewrites: kro and it would rewrite it in turn forever."""
    fighting: dict[str, Any] = json.loads(json.dumps(rgd()))
    deployment = next(r for r in fighting["spec"]["resources"] if r["id"] == "deployment")
    deployment["template"]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "7"
    return fighting


def children(name: str, namespace: str) -> list[tuple[GVR, dict[str, Any]]]:
    meta = {"name": name, "namespace": namespace}
    labels = {"app": name}
    return [
        (
            GVR("", "v1", "configmaps"),
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": meta,
                "data": {"message": "hello"},
            },
        ),
        (
            GVR("apps", "v1", "deployments"),
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {**meta, "annotations": {"config": name}},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
                    },
                },
            },
        ),
        (
            GVR("", "v1", "services"),
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": meta,
                "spec": {"selector": labels, "ports": [{"port": 80}]},
            },
        ),
    ]


SCENARIO = RgdScenario("three", rgd, children, fighting_rgd)
