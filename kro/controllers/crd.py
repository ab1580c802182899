"""kro.controllers.crd: install and update the CRD an RGD generates (reference §1.O, P-09).

Create when absent and wait until it is Established (Q-01). When present: refuse a CRD kro does
not own or that another RGD owns (P-09); compare the live and desired schema and names and write
nothing when they agree (Q-02); refuse breaking changes unless the RGD allows them (Q-03, Q-05);
otherwise merge-patch the group, names, scope, versions and labels (Q-06).

`crd_is_current` is the read-only half, for replicas that do not lead
(kro.controllers.leadership): true once the cluster's CRD is the one `ensure_crd` would leave
as it is, Established.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from typing import Any

import structlog

from kro.api.names import (
    LABEL_KRO_VERSION,
    LABEL_MANAGED_BY,
    LABEL_OWNED,
    LABEL_RGD_NAME,
    MANAGED_BY_VALUE,
)
from kro.graph.compat import compare_crds
from kro.runtime.client import Client
from kro.runtime.errors import NotFound
from kro.runtime.gvk import GVR

log = structlog.get_logger(__name__)

CRDS = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")
ESTABLISH_POLL_S = 0.15
ESTABLISH_TIMEOUT_S = 120.0


class CRDError(Exception):
    """The CRD cannot be installed or updated; the message goes to KindReady."""


def is_kro_owned(crd: Mapping[str, Any]) -> bool:
    labels = (crd.get("metadata") or {}).get("labels") or {}
    return bool(
        labels.get(LABEL_OWNED) == "true" or labels.get(LABEL_MANAGED_BY) == MANAGED_BY_VALUE
    )


def _is_established(crd: Mapping[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def _names(crd: Mapping[str, Any]) -> dict[str, Any]:
    """spec.names without empty lists, so `[]` and absent compare equal."""
    names = dict((crd.get("spec") or {}).get("names") or {})
    return {k: v for k, v in names.items() if v not in ([], None, "")}


async def ensure_crd(
    client: Client,
    desired: Mapping[str, Any],
    *,
    rgd_name: str,
    allow_breaking: bool,
    conservative: bool = False,
) -> None:
    """Make the cluster's CRD match `desired`; raises CRDError with a user-facing message.

    conservative: the `ConservativeCRDComparison` gate (V-11, kro.graph.compat).
    """
    name = str(desired["metadata"]["name"])
    try:
        live = await client.get(CRDS, name)
    except NotFound:
        await client.create(CRDS, desired)
        log.info("crd.created", crd=name, rgd=rgd_name)
        await wait_established(client, name)
        return
    if not is_kro_owned(live):
        raise CRDError(f"failed to update CRD {name}: CRD already exists and is not owned by KRO")
    owner = _owner(live)
    if owner and owner != rgd_name:
        raise CRDError(
            f"failed to update CRD {name}: CRD is owned by another ResourceGraphDefinition {owner}"
        )
    report = compare_crds(live, desired, conservative=conservative)
    if not report.has_changes() and not _labels_or_names_differ(live, desired):
        return
    if report.breaking and not allow_breaking:
        raise CRDError(f"cannot update CRD {name}: breaking changes detected: {report.summary()}")
    spec = desired["spec"]
    patch: dict[str, Any] = {
        "spec": {
            "group": spec["group"],
            "names": {
                **copy.deepcopy(spec["names"]),
                "shortNames": spec["names"].get("shortNames") or [],
                "categories": spec["names"].get("categories") or [],
            },
            "scope": spec["scope"],
            "versions": copy.deepcopy(spec["versions"]),
        }
    }
    metadata = desired.get("metadata") or {}
    if metadata.get("labels") or metadata.get("annotations"):
        patch["metadata"] = {
            k: dict(metadata[k]) for k in ("labels", "annotations") if metadata.get(k)
        }
    await client.patch(CRDS, name, patch, patch_type="merge")
    log.info("crd.updated", crd=name, rgd=rgd_name, changes=len(report.changes))
    await wait_established(client, name)


def _owner(crd: Mapping[str, Any]) -> str:
    return str(((crd.get("metadata") or {}).get("labels") or {}).get(LABEL_RGD_NAME) or "")


def _labels_or_names_differ(
    live: Mapping[str, Any], desired: Mapping[str, Any], *, ignore: frozenset[str] = frozenset()
) -> bool:
    """A desired label missing or different on the live CRD (but those in `ignore`), or
    different spec.names."""
    live_labels = (live.get("metadata") or {}).get("labels") or {}
    return any(
        live_labels.get(k) != v
        for k, v in ((desired.get("metadata") or {}).get("labels") or {}).items()
        if k not in ignore
    ) or _names(live) != _names(desired)


async def crd_is_current(
    client: Client,
    desired: Mapping[str, Any],
    *,
    rgd_name: str,
    ignore_labels: frozenset[str] = frozenset({LABEL_KRO_VERSION}),
    conservative: bool = False,
) -> bool:
    """Read-only: is the cluster's CRD the one `ensure_crd(desired)` would leave as it is, and
    Established? False while it is missing, owned by someone else, or not updated yet. What a
    replica that does not lead waits for before it serves a kind (on the hub, or in its
    members: kro.controllers.spokes).

    `ignore_labels`: labels that may differ (by default the kro version, while replicas of two
    versions run side by side during a rolling upgrade). `conservative`: as the leader compares.
    """
    try:
        live = await client.get(CRDS, str(desired["metadata"]["name"]))
    except NotFound:
        return False
    if not is_kro_owned(live) or _owner(live) not in ("", rgd_name):
        return False
    if compare_crds(live, desired, conservative=conservative).has_changes():
        return False
    return _is_established(live) and not _labels_or_names_differ(
        live, desired, ignore=ignore_labels
    )


async def wait_established(client: Client, name: str) -> None:
    """Poll until the CRD reports Established (every 150 ms, 2 minutes at most, Q-01)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ESTABLISH_TIMEOUT_S
    while True:
        crd = await client.get(CRDS, name)
        if _is_established(crd):
            client.mapper.invalidate()
            return
        if loop.time() > deadline:
            raise CRDError(f"CRD {name} did not become Established in {ESTABLISH_TIMEOUT_S:.0f}s")
        await asyncio.sleep(ESTABLISH_POLL_S)


async def delete_crd_if_owned(client: Client, name: str, *, rgd_name: str) -> bool:
    """Delete the CRD only when its RGD-name label names this RGD (P-11)."""
    try:
        live = await client.get(CRDS, name)
    except NotFound:
        return False
    owner = ((live.get("metadata") or {}).get("labels") or {}).get(LABEL_RGD_NAME)
    if owner != rgd_name:
        return False
    await client.delete(CRDS, name)
    log.info("crd.deleted", crd=name, rgd=rgd_name)
    return True
