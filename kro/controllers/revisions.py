"""kro.controllers.revisions: the RGD controller's GraphRevision bookkeeping (§1.M P-04, P-06,
P-10; §1.N N-06, N-09).

GraphRevisions are listed straight from the API server (never from a cache: the decision to
issue revision N+1 must not rest on a stale list), adopted when an RGD was re-created under the
same name, created with the next number, and garbage-collected down to the newest N. The
GraphRevision controller (`graphrevision`) compiles them; the RGD controller (`rgd`) decides.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from kro.api.names import (
    KRO_DOMAIN,
    LABEL_GRAPH_REVISION_HASH,
    LABEL_KRO_VERSION,
    LABEL_OWNED,
    LABEL_RGD_NAME,
    OWNED_VALUE,
    RGD_KIND,
    V1ALPHA1,
)
from kro.api.objects import metadata as _meta
from kro.controllers.graphrevision import GRAPH_REVISIONS
from kro.controllers.instance.labels import KRO_VERSION
from kro.controllers.metrics import RGDMetrics
from kro.graph.hashing import graph_revision_name
from kro.runtime.client import Client
from kro.runtime.errors import KubeError

log = structlog.get_logger(__name__)


def owner_reference(rgd: Mapping[str, Any]) -> dict[str, Any]:
    """GraphRevisions are controlled by their RGD, so RGD deletion cascades to them (B-08)."""
    return {
        "apiVersion": f"{KRO_DOMAIN}/{V1ALPHA1}",
        "kind": RGD_KIND,
        "name": str(_meta(rgd)["name"]),
        "uid": str(_meta(rgd).get("uid")),
        "controller": True,
    }


@dataclass(slots=True)
class Revisions:
    """An RGD's GraphRevisions: live ones (adopted if needed) and those being deleted."""

    live: list[dict[str, Any]] = field(default_factory=list)
    terminating: list[dict[str, Any]] = field(default_factory=list)

    @property
    def latest(self) -> dict[str, Any] | None:
        return max(self.live, key=lambda r: int(r["spec"]["revision"]), default=None)


async def list_revisions(
    client: Client, rgd: Mapping[str, Any], *, adopt: bool = True
) -> Revisions:
    """GraphRevisions of `rgd` (direct read), adopting live ones it does not own (P-04).

    adopt=False (a replica that does not lead, kro.controllers.leadership): read only; a
    revision the leader has yet to adopt counts as live all the same.
    """
    name, uid = str(_meta(rgd)["name"]), str(_meta(rgd).get("uid"))
    page = await client.list(GRAPH_REVISIONS, field_selector=f"spec.snapshot.name={name}")
    found = Revisions()
    for item in page.get("items") or []:
        if _meta(item).get("deletionTimestamp"):
            found.terminating.append(item)
            continue
        owners = _meta(item).get("ownerReferences") or []
        if adopt and not any(o.get("uid") == uid and o.get("controller") for o in owners):
            adopted = copy.deepcopy(item)
            adopted["metadata"]["ownerReferences"] = [owner_reference(rgd)]
            found.live.append(await client.update(GRAPH_REVISIONS, adopted))
            log.info("rgd.revision_adopted", revision=_meta(item).get("name"))
            continue
        found.live.append(item)
    return found


def revision_manifest(rgd: Mapping[str, Any], number: int, spec_hash: str) -> dict[str, Any]:
    """GraphRevision `<rgd>-r<number>`: an immutable snapshot of the RGD's spec (P-06, B-01)."""
    name = str(_meta(rgd)["name"])
    return {
        "apiVersion": GRAPH_REVISIONS.api_version,
        "kind": "GraphRevision",
        "metadata": {
            "name": graph_revision_name(name, number),
            "labels": {
                LABEL_OWNED: OWNED_VALUE,
                LABEL_KRO_VERSION: KRO_VERSION,
                LABEL_RGD_NAME: name,
                LABEL_GRAPH_REVISION_HASH: spec_hash,
            },
            "ownerReferences": [owner_reference(rgd)],
        },
        "spec": {
            "revision": number,
            "snapshot": {
                "name": name,
                "generation": _meta(rgd).get("generation", 0),
                "spec": copy.deepcopy(rgd.get("spec") or {}),
            },
        },
    }


async def collect_revisions(
    client: Client, name: str, *, current: int, keep: int, metrics: RGDMetrics
) -> None:
    """Keep the newest `keep` revisions of RGD `name`; delete older ones (P-10, keep <= 0: all).

    Failures are logged and counted, never raised: garbage is collected again next time.
    """
    if keep <= 0:
        return
    page = await client.list(GRAPH_REVISIONS, field_selector=f"spec.snapshot.name={name}")
    numbers = sorted(
        (int(i["spec"]["revision"]), i)
        for i in page.get("items") or []
        if not _meta(i).get("deletionTimestamp")
    )
    for number, item in numbers[:-keep] if len(numbers) > keep else []:
        if number >= current:
            continue
        try:
            await client.delete(GRAPH_REVISIONS, str(_meta(item)["name"]))
            metrics.gc_deleted.inc()
            log.info("rgd.revision_collected", revision=number)
        except KubeError as error:
            metrics.gc_errors.inc()
            log.warning("rgd.revision_gc_failed", revision=number, error=str(error))
