"""ConfigMap labeller: the `example.kro.run/team` annotation of each ConfigMap, copied into a label.

Labels are what selectors see (`kubectl get cm -l example.kro.run/team=payments`); annotations
are where people write. Predicates keep the controller quiet: it reconciles a ConfigMap only when
its annotations or labels change, so edits of `data` (the common write) never wake it, and
ConfigMaps labelled `example.kro.run/skip` are left alone. docs/runtime.md compares it with
controller-runtime and kopf.

    KUBECONFIG=~/.kube/config python examples/runtime/configmap_labeller.py [NAMESPACE]
"""

import asyncio
import os
import sys
from typing import Any

from kro.runtime import GVR, Client, ControllerBuilder, Manager, ManagerOptions, configure_logging
from kro.runtime.predicates import annotations_changed, has_labels, labels_changed

CONFIGMAPS = GVR("", "v1", "configmaps")
TEAM = "example.kro.run/team"  # the annotation, and the label it becomes


def setup(manager: Manager, client: Client, namespace: str | None) -> None:
    async def label(cm: dict[str, Any]) -> None:
        meta = cm["metadata"]
        team = (meta.get("annotations") or {}).get(TEAM)
        if (meta.get("labels") or {}).get(TEAM) != team:  # a None label removes it
            patch = {"metadata": {"labels": {TEAM: team}}}
            await client.patch(CONFIGMAPS, meta["name"], patch, namespace=meta["namespace"])

    (
        ControllerBuilder(manager, name="configmap-labeller")
        .for_(CONFIGMAPS, predicates=annotations_changed() | labels_changed())
        .with_predicates(~has_labels("example.kro.run/skip"))
        .in_namespace(namespace)
        .reconcile_objects(label)
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
