"""Website operator: a CRD with a pydantic-typed spec, an owned Deployment, status conditions.

For each Website (examples/runtime/website-crd.yaml) it keeps a Deployment of `spec.image` with
`spec.replicas`, owned by the Website: delete or edit the Deployment and it is put back, delete
the Website and Kubernetes' garbage collector removes the Deployment. The Website's status
reports `readyReplicas` and an `Available` condition whose lastTransitionTime moves only when it
flips; each change of it is also an Event on the Website (Normal when available, else Warning),
through the recorder the manager names after the controller, and so is a failed reconcile (a
Warning the builder posts by itself). The spec is validated by a pydantic model on every read;
a Website that does not fit it fails once (a terminal error, logged and posted as a Warning)
instead of being retried. docs/runtime.md compares it with controller-runtime and kopf.

    kubectl apply -f examples/runtime/website-crd.yaml
    python examples/runtime/website_operator.py [--namespace NS]
"""

from typing import Any

from pydantic import Field

from kro.runtime import GVK, Condition, KubeModel, Manager, WireModel, run
from kro.runtime.conditions import set_condition
from kro.runtime.owners import set_controller_reference
from kro.runtime.predicates import generation_changed


class WebsiteSpec(WireModel):
    image: str
    replicas: int = Field(1, ge=0, le=10)


class WebsiteStatus(WireModel):
    ready_replicas: int = 0
    conditions: list[Condition] = []


class Website(KubeModel):
    gvk = GVK("example.kro.run", "v1alpha1", "Website")  # the plural comes from discovery
    spec: WebsiteSpec
    status: WebsiteStatus = Field(default_factory=WebsiteStatus)


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


def setup(manager: Manager) -> None:
    events = manager.event_recorder("website")  # what `kubectl describe website` lists

    async def reconcile(site: Website) -> None:
        deployment = await manager.client.apply(deployment_for(site))
        ready = (deployment.get("status") or {}).get("readyReplicas", 0)
        available = ready >= site.spec.replicas
        site.status.ready_replicas = ready
        reason = "MinimumReplicasAvailable" if available else "ReplicasNotReady"
        message = f"{ready}/{site.spec.replicas} replicas ready"
        if set_condition(site.status, "Available", str(available), reason=reason, message=message,
                         observed_generation=site.metadata.generation):  # fmt: skip
            events.record(site, "Normal" if available else "Warning", reason, message)
        await manager.client.update_status(site)  # skipped when nothing changed

    (
        manager.controller("website")
        .for_(Website, predicates=generation_changed())  # our status writes do not wake us
        .owns("Deployment")  # a Deployment changed or deleted -> its Website is reconciled
        .reconcile_objects(reconcile)
    )


if __name__ == "__main__":
    run(setup)
