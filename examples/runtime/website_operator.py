"""Website operator: a CRD with a pydantic-typed spec, an owned Deployment, status conditions.

For each Website (examples/runtime/website-crd.yaml) it keeps a Deployment of `spec.image` with
`spec.replicas`, owned by the Website: delete or edit the Deployment and it is put back, delete
the Website and Kubernetes' garbage collector removes the Deployment. The Website's status
reports `readyReplicas` and an `Available` condition whose lastTransitionTime moves only when it
flips. The spec is validated by a pydantic model on every read; a Website that does not fit it
fails once (a terminal error, logged) instead of being retried. docs/runtime.md compares it with
controller-runtime and kopf.

    kubectl apply -f examples/runtime/website-crd.yaml
    KUBECONFIG=~/.kube/config python examples/runtime/website_operator.py [NAMESPACE]
"""

import asyncio
import os
import sys
from typing import Any

from pydantic import Field

from kro.runtime import (
    GVK,
    GVR,
    Client,
    ControllerBuilder,
    KubeModel,
    Manager,
    ManagerOptions,
    StatusWriter,
    WireModel,
    configure_logging,
)
from kro.runtime.conditions import set_condition
from kro.runtime.owners import set_controller_reference
from kro.runtime.predicates import generation_changed
from kro.runtime.typed import Condition

DEPLOYMENTS = GVR("apps", "v1", "deployments")


class WebsiteSpec(WireModel):
    image: str
    replicas: int = Field(1, ge=0, le=10)


class WebsiteStatus(WireModel):
    ready_replicas: int = 0
    conditions: list[Condition] = []


class Website(KubeModel):
    gvk = GVK("example.kro.run", "v1alpha1", "Website")
    gvr = GVR("example.kro.run", "v1alpha1", "websites")
    spec: WebsiteSpec
    status: WebsiteStatus | None = None


def deployment_for(site: Website) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": site.name}
    container = {"name": "web", "image": site.spec.image}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": site.name, "namespace": site.namespace, "labels": labels},
        "spec": {
            "replicas": site.spec.replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }
    return dict(set_controller_reference(site, deployment))


def setup(manager: Manager, client: Client, namespace: str | None) -> None:
    status_writer = StatusWriter(client)

    async def reconcile(site: Website) -> None:
        deployment = await client.apply(
            DEPLOYMENTS, deployment_for(site), field_manager="website-operator", force=True
        )
        ready = (deployment.get("status") or {}).get("readyReplicas", 0)
        status = site.to_dict().get("status") or {}
        status["readyReplicas"] = ready
        available = "True" if ready >= site.spec.replicas else "False"
        reason = "MinimumReplicasAvailable" if available == "True" else "ReplicasNotReady"
        set_condition(status, "Available", available, reason=reason,
                      message=f"{ready}/{site.spec.replicas} replicas ready",
                      observed_generation=site.metadata.generation)  # fmt: skip
        await status_writer.update(Website, site, status)  # skipped when nothing changed

    (
        ControllerBuilder(manager, name="website")
        .for_(Website, predicates=generation_changed())  # our status writes do not wake us
        .owns(DEPLOYMENTS)  # a Deployment changed or deleted -> its Website is reconciled
        .in_namespace(namespace)
        .reconcile_objects(reconcile)
    )


async def main(namespace: str | None) -> None:
    configure_logging("console", "info")
    async with await Client.from_kubeconfig() as client:
        probes = os.environ.get("PROBE_ADDRESS", "0")  # e.g. ":8081" in a pod
        manager = Manager(ManagerOptions(health_probe_bind_address=probes), client=client)
        setup(manager, client, namespace)
        await manager.run()  # until SIGTERM or Ctrl-C; then drains and stops


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else None))
