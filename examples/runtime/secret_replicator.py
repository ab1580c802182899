"""Secret replicator: copies of a Secret in the namespaces its annotation names, kept in step.

Annotate a Secret `example.kro.run/replicate-to: team-a,team-b` and a copy appears in each of
those namespaces; edit or delete a copy and it is restored; drop a namespace from the list and
its copy goes. Copies live in other namespaces, where ownerReferences cannot reach, so deleting
the source relies on a finalizer: the source stays until its copies are gone. Copies are found
by their `example.kro.run/replica-of` label, through one cluster-wide watch of labelled Secrets
(so a change to a copy brings its source back to the reconciler). docs/runtime.md compares it
with controller-runtime and kopf.

    python examples/runtime/secret_replicator.py [--namespace SOURCE_NAMESPACE]
"""

from typing import Any

from kro.runtime import Manager, Request, run

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


def setup(manager: Manager) -> None:
    client = manager.client

    async def delete_copies(source: Obj, keep: set[str] | None = None) -> None:
        selector = f"{REPLICA_OF}={replica_label(source)}"
        for copy in await client.list("Secret", label_selector=selector):
            if copy["metadata"]["namespace"] not in (keep or set()):
                await client.delete(copy, missing_ok=True)

    async def replicate(source: Obj) -> None:
        targets = targets_of(source)
        for target in sorted(targets):
            meta = {"name": source["metadata"]["name"], "namespace": target}
            copy = {"apiVersion": "v1", "kind": "Secret", "type": source.get("type", "Opaque"),
                    "metadata": {**meta, "labels": {REPLICA_OF: replica_label(source)}},
                    "data": source.get("data") or {}}  # fmt: skip
            await client.apply(copy)
        await delete_copies(source, keep=targets)

    (
        manager.controller("secret-replicator")
        .for_("Secret")
        # held until its copies are gone: on deletion, or once it names no target namespace
        .finalize(FINALIZER, delete_copies, needed=lambda source: bool(targets_of(source)))
        .watches("Secret", source_of, namespace=None, label_selector=REPLICA_OF)
        .reconcile_objects(replicate)
    )


if __name__ == "__main__":
    run(setup)
