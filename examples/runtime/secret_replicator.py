"""Secret replicator: copies of a Secret in the namespaces its annotation names, kept in step.

Annotate a Secret `example.kro.run/replicate-to: team-a,team-b` and a copy appears in each of
those namespaces; edit or delete a copy and it is restored; drop a namespace from the list and
its copy goes. Copies live in other namespaces, where ownerReferences cannot reach, so deleting
the source relies on a finalizer: the source stays until its copies are gone. Copies are found
by their `example.kro.run/replica-of` label, through one cluster-wide watch of labelled Secrets
(so a change to a copy brings its source back to the reconciler). docs/runtime.md compares it
with controller-runtime and kopf.

    KUBECONFIG=~/.kube/config python examples/runtime/secret_replicator.py [SOURCE_NAMESPACE]
"""

import asyncio
import contextlib
import os
import sys
from typing import Any

from kro.runtime import (
    GVR,
    Client,
    ControllerBuilder,
    Finalizer,
    Manager,
    ManagerOptions,
    Request,
    configure_logging,
    errors,
)
from kro.runtime.finalizers import has_finalizer, remove_finalizer

SECRETS = GVR("", "v1", "secrets")
TARGETS = "example.kro.run/replicate-to"  # annotation on sources: "ns-a,ns-b"
REPLICA_OF = "example.kro.run/replica-of"  # label on copies: "<namespace>.<name>"
FINALIZER = "example.kro.run/replicas"
Obj = dict[str, Any]


def targets_of(source: Obj) -> set[str]:
    meta = source["metadata"]
    names = (meta.get("annotations") or {}).get(TARGETS, "").split(",")
    return {n.strip() for n in names if n.strip()} - {meta["namespace"]}


def replica_label(source: Obj) -> str:
    return f"{source['metadata']['namespace']}.{source['metadata']['name']}"


def source_of(copy: Obj) -> list[Request]:
    """Map function: a changed or deleted copy -> the source it was made from."""
    namespace, _, name = copy["metadata"]["labels"][REPLICA_OF].partition(".")
    return [Request(namespace, name)]


def setup(manager: Manager, client: Client, namespace: str | None) -> None:
    async def delete_copies(source: Obj, keep: set[str] | None = None) -> None:
        selector = f"{REPLICA_OF}={replica_label(source)}"
        for copy in await manager.reader.list(SECRETS, label_selector=selector):
            meta = copy["metadata"]
            if meta["namespace"] not in (keep or set()):
                with contextlib.suppress(errors.NotFound):
                    await client.delete(SECRETS, meta["name"], namespace=meta["namespace"])

    finalizer = Finalizer(client, FINALIZER, delete_copies)

    async def replicate(source: Obj) -> None:
        targets = targets_of(source)
        if not targets:  # not (or no longer) replicated: clean up and let go of it
            if has_finalizer(source, FINALIZER):
                await delete_copies(source)
                await remove_finalizer(client, SECRETS, source, FINALIZER)
            return
        if (await finalizer.handle(SECRETS, source)).deleting:
            return  # copies deleted, finalizer removed
        for target in sorted(targets):
            meta = {"name": source["metadata"]["name"], "namespace": target}
            copy = {"apiVersion": "v1", "kind": "Secret", "type": source.get("type", "Opaque"),
                    "metadata": {**meta, "labels": {REPLICA_OF: replica_label(source)}},
                    "data": source.get("data") or {}}  # fmt: skip
            await client.apply(SECRETS, copy, field_manager="secret-replicator", force=True)
        await delete_copies(source, keep=targets)

    (
        ControllerBuilder(manager, name="secret-replicator")
        .for_(SECRETS)
        .watches(SECRETS, source_of, namespace=None, label_selector=REPLICA_OF)
        .in_namespace(namespace)
        .reconcile_objects(replicate)
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
