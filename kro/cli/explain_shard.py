"""kro.cli.explain_shard: which `kro controller --shards=auto` replica reconciles an instance.

Sharded replicas (kro.runtime.sharding) each hold a member Lease labelled `kro.run/shard-group`;
the sorted names of the live members split the 64-bit FNV-1a hash space of namespaces into
equal ranges (`assign`), and the replica whose range holds the hash of the instance's namespace
reconciles it. Explain reads the member Leases and computes that assignment with the replicas'
own functions, so "who owns this instance?" has the answer the replicas themselves reach.

Liveness is the one thing a one-shot reader cannot copy: a replica counts a member alive until
the lease duration has passed *on its own clock* since it saw the Lease change. Explain has no
history, so it takes a Lease as live while `renewTime + leaseDurationSeconds` is in the future
on its wall clock (what a Lease says of itself). The two agree except within one lease duration
of a replica's death, or under clock skew; a replica gives its range up only after
acknowledging the new view, which explain reports as a handover in progress (not every live
member has written the current view's id into `kro.run/shard-view`).

Several groups (two kro installations, or one group name in two namespaces) are reported one
by one. Reading Leases needs `list` on coordination.k8s.io, which the `view` role does not
grant: then nothing is said about shards, as for a cluster that does not shard at all.
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


def _renewed(spec: Mapping[str, Any]) -> datetime | None:
    text = str(spec.get("renewTime") or "")
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def is_live(lease: Mapping[str, Any], now: datetime) -> bool:
    """Held (a holder identity) and renewed within its own lease duration before `now`."""
    spec = lease.get("spec") or {}
    renewed = _renewed(spec)
    if not spec.get("holderIdentity") or renewed is None:
        return False
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
