"""ConfigMap labeller: the `example.kro.run/team` annotation of each ConfigMap, copied into a label.

Labels are what selectors see (`kubectl get cm -l example.kro.run/team=payments`); annotations
are where people write. Predicates keep the controller quiet: it reconciles a ConfigMap only when
its annotations or labels change, so edits of `data` (the common write) never wake it, and
ConfigMaps labelled `example.kro.run/skip` are left alone. docs/runtime.md compares it with
controller-runtime and kopf.

    python examples/runtime/configmap_labeller.py [--namespace NS] [--help for every flag]
"""

from kro.runtime import Manager, Object, run
from kro.runtime.predicates import annotations_changed, has_labels, labels_changed

TEAM = "example.kro.run/team"  # the annotation, and the label it becomes


def setup(manager: Manager) -> None:
    async def label(cm: Object) -> None:
        team = (cm["metadata"].get("annotations") or {}).get(TEAM)
        if (cm["metadata"].get("labels") or {}).get(TEAM) != team:  # a None label removes it
            await manager.client.patch(cm, {"metadata": {"labels": {TEAM: team}}})

    # data edits never reach the queue; ConfigMaps labelled example.kro.run/skip are left alone
    wanted = (annotations_changed() | labels_changed()) & ~has_labels("example.kro.run/skip")
    controller = manager.controller("configmap-labeller")
    controller.for_("ConfigMap", predicates=wanted).reconcile_objects(label)


if __name__ == "__main__":
    run(setup)  # flags and environment: logging, kubeconfig, probes, leader election, signals
