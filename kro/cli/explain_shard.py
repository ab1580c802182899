"""kro.cli.explain_shard: which `kro controller --shards=auto` replica reconciles an instance.

Explain reads the member Leases (label `kro.run/shard-group`) and computes the assignment with
the replicas' own functions (kro.runtime.sharding.assign), so "who owns this instance?" has the
answer the replicas themselves reach. Liveness is the one thing a one-shot reader cannot copy
(a replica judges it on its own clock since it saw the Lease change): explain has no history,
so a Lease is live while `renewTime + leaseDurationSeconds` is in the future, what a Lease
says of itself (docs/explain.md says when the two differ). A handover is in progress while
not every live member has written the current view's id into `kro.run/shard-view`.

Several groups (two installations, or one group name in two namespaces) are reported one by
one. Without `list` on Leases (the `view` role has none) nothing is said about shards.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Protocol

from kro.api.objects import metadata as _meta
from kro.cli.explain_report import ShardReport
from kro.runtime.errors import KubeError
from kro.runtime.leaderelection import LEASES
from kro.runtime.sharding import (
    GROUP_LABEL,
    VIEW_ANNOTATION,
    assign,
    contains,
    describe,
    fnv1a64,
    view_id,
)


class LeaseLister(Protocol):
    """The one call explain makes for shards (kro.runtime.client.Client provides it)."""

    async def list_all(
        self, gvr: Any, *, label_selector: str | None = None
    ) -> tuple[list[dict[str, Any]], str]: ...


def is_live(lease: Mapping[str, Any], now: datetime) -> bool:
    """Held (a holder identity) and renewed within its own lease duration before `now`."""
    spec = lease.get("spec") or {}
    try:
        renewed = datetime.fromisoformat(str(spec.get("renewTime")).replace("Z", "+00:00"))
    except ValueError:
        return False
    if not spec.get("holderIdentity"):
        return False
    renewed = renewed if renewed.tzinfo else renewed.replace(tzinfo=UTC)
    return (now - renewed).total_seconds() < float(spec.get("leaseDurationSeconds") or 0)


def shard_owners(
    namespace: str, leases: Iterable[Mapping[str, Any]], now: datetime
) -> tuple[ShardReport, ...]:
    """Per shard group (Lease namespace, group label), who owns `namespace`'s hash."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for lease in leases:
        meta = _meta(lease)
        group = str((meta.get("labels") or {}).get(GROUP_LABEL) or "")
        if group:
            groups[(str(meta.get("namespace") or ""), group)].append(lease)
    return tuple(_owner(namespace, key, members, now) for key, members in sorted(groups.items()))


def _owner(
    namespace: str, key: tuple[str, str], leases: list[Mapping[str, Any]], now: datetime
) -> ShardReport:
    lease_namespace, group = key
    digest = fnv1a64(namespace)
    live = {str(_meta(lease).get("name")): lease for lease in leases if is_live(lease, now)}
    expired = sorted({str(_meta(lease).get("name")) for lease in leases} - live.keys())
    report = ShardReport(
        group=group,
        lease_namespace=lease_namespace,
        namespace=namespace,
        namespace_hash=f"0x{digest:016x}",
        members=tuple(sorted(live)),
        expired=tuple(expired),
    )
    if not live:
        return report
    current = view_id(live)
    owner_lease, owned = next(
        (name, owned) for name, owned in assign(live).items() if contains((owned,), digest)
    )
    acknowledged = all(
        (_meta(lease).get("annotations") or {}).get(VIEW_ANNOTATION) == current
        for lease in live.values()
    )
    return replace(
        report,
        owner=str((live[owner_lease].get("spec") or {}).get("holderIdentity") or ""),
        owner_lease=owner_lease,
        owner_range=describe((owned,)),
        handover=not acknowledged,
    )


async def read_shard_owners(
    client: LeaseLister, namespace: str, *, now: datetime | None = None
) -> tuple[ShardReport, ...]:
    """The member Leases of every shard group in the cluster, and who owns `namespace`;
    nothing when there are none or they cannot be read."""
    try:
        leases, _ = await client.list_all(LEASES, label_selector=GROUP_LABEL)
    except KubeError:
        return ()
    return shard_owners(namespace, leases, now or datetime.now(UTC))
