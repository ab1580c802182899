"""kro.controllers.rgd: the ResourceGraphDefinition controller (reference §1.M).

Per reconcile: finalizer (P-02) → spec hash (P-03) → list and adopt GraphRevisions (P-04) →
decide (P-05): wait for terminating revisions or warm-up, issue a new revision when there is none
or the hash changed (after validating the graph, P-06), wait for compilation, or serve the latest
Active revision (P-07): ensure the CRD, register the instance controller with the dynamic
controller, garbage-collect old revisions (P-10). Conditions and state per P-08.

An invalid RGD update never issues a revision, so the previous one keeps serving instances while
the RGD reports `GraphAccepted=False` and `Inactive` (N-07, N-30).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from kro.api.conditions import aggregate_ready, is_condition_true, set_condition
from kro.api.names import (
    ALLOW_BREAKING_CHANGES_VALUE,
    ANNOTATION_ALLOW_BREAKING_CHANGES,
    CONDITION_CONTROLLER_READY,
    CONDITION_GRAPH_ACCEPTED,
    CONDITION_GRAPH_REVISIONS_RESOLVED,
    CONDITION_KIND_READY,
    CONDITION_READY,
    FINALIZER,
    KRO_DOMAIN,
    LABEL_GRAPH_REVISION_HASH,
    LABEL_KRO_VERSION,
    LABEL_OWNED,
    LABEL_RGD_ID,
    LABEL_RGD_NAME,
    OWNED_VALUE,
    REASON_FAILED,
    REASON_FAILED_TO_START,
    REASON_INVALID_RESOURCE_GRAPH,
    REASON_READY,
    REASON_RESOLVED,
    REASON_RUNNING,
    REASON_VALID,
    REASON_WAITING_FOR_GRAPH_REVISION_COMPILATION,
    REASON_WAITING_FOR_GRAPH_REVISION_SETTLEMENT,
    REASON_WAITING_FOR_GRAPH_REVISION_WARMUP,
    RGD_DEPENDENT_CONDITIONS,
    RGD_KIND,
    RGD_PLURAL,
    RGD_STATE_ACTIVE,
    RGD_STATE_INACTIVE,
    STATUS_FALSE,
    STATUS_TRUE,
    STATUS_UNKNOWN,
    V1ALPHA1,
)
from kro.applyset import Applier, remove_finalizer
from kro.controllers.crd import CRDError, delete_crd_if_owned, ensure_crd
from kro.controllers.graphrevision import GRAPH_REVISIONS
from kro.controllers.instance import InstanceOptions, InstanceReconciler, should_enqueue_update
from kro.controllers.instance.labels import KRO_VERSION
from kro.controllers.instance.status import now_rfc3339
from kro.controllers.registry import RevisionRegistry, RevisionState
from kro.dynamic import DynamicController
from kro.graph.builder import BuildOptions, build_graph_async
from kro.graph.errors import GraphError
from kro.graph.hashing import graph_revision_name, spec_hash
from kro.graph.model import Graph
from kro.graph.resolver import SchemaResolver
from kro.runtime.client import Client
from kro.runtime.errors import KubeError, NotFound
from kro.runtime.gvk import GVR
from kro.runtime.reconcile import Request, Result

log = structlog.get_logger(__name__)

RGDS = GVR(KRO_DOMAIN, V1ALPHA1, RGD_PLURAL)


@dataclass(frozen=True, kw_only=True)
class RGDOptions:
    """The RGD controller's flags (§1.S) and what it hands to instance controllers."""

    allow_crd_deletion: bool = False
    max_graph_revisions: int = 5
    progress_requeue_delay_s: float = 3.0
    build: BuildOptions = field(default_factory=BuildOptions)
    instance: InstanceOptions = field(default_factory=InstanceOptions)


@dataclass(slots=True)
class _Served:
    gvr: GVR
    revision: int


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


class RGDReconciler:
    """Reconciles ResourceGraphDefinitions; owns the registration of instance controllers."""

    def __init__(
        self,
        *,
        client: Client,
        registry: RevisionRegistry,
        resolver: SchemaResolver,
        dynamic: DynamicController,
        applier: Applier,
        options: RGDOptions | None = None,
    ) -> None:
        self.client = client
        self.registry = registry
        self.resolver = resolver
        self.dynamic = dynamic
        self.applier = applier
        self.options = options or RGDOptions()
        self._served: dict[str, _Served] = {}  # rgd uid -> what is registered for it

    def _wait(self) -> Result:
        return Result(requeue_after_s=self.options.progress_requeue_delay_s)

    async def reconcile(self, request: Request) -> Result:
        try:
            rgd = await self.client.get(RGDS, request.name)
        except NotFound:
            return Result()
        with structlog.contextvars.bound_contextvars(rgd=request.name):
            if _meta(rgd).get("deletionTimestamp"):
                return await self._delete(rgd)
            rgd = await self._ensure_finalizer(rgd)
            status = copy.deepcopy(rgd.get("status") or {})
            try:
                result = await self._resolve(rgd, status)
            finally:
                await self._write_status(rgd, status)
            return result

    # -- revisions ---------------------------------------------------------------------------

    async def _resolve(self, rgd: dict[str, Any], status: dict[str, Any]) -> Result:
        name = str(_meta(rgd)["name"])
        generation = _meta(rgd).get("generation")
        wanted_hash = spec_hash(rgd.get("spec") or {})
        live, terminating = await self._revisions(rgd)
        if not live and not terminating:
            self.registry.drop(name)
        latest = max(live, key=lambda r: int(r["spec"]["revision"]), default=None)
        now = now_rfc3339()

        def cond(kind: str, value: str, reason: str, message: str = "") -> None:
            set_condition(
                status,
                kind,
                value,
                now=now,
                reason=reason,
                message=message,
                observed_generation=generation,
            )

        if terminating:
            cond(
                CONDITION_GRAPH_REVISIONS_RESOLVED,
                STATUS_UNKNOWN,
                REASON_WAITING_FOR_GRAPH_REVISION_SETTLEMENT,
                "waiting for terminating graph revisions to settle",
            )
            return self._wait()
        latest_number = int(latest["spec"]["revision"]) if latest else 0
        if latest is not None and self.registry.get(name, latest_number) is None:
            cond(
                CONDITION_GRAPH_REVISIONS_RESOLVED,
                STATUS_UNKNOWN,
                REASON_WAITING_FOR_GRAPH_REVISION_WARMUP,
                f"waiting for graph revision {latest_number} to warm up",
            )
            return self._wait()
        latest_hash = str(
            ((latest or {}).get("metadata") or {})
            .get("labels", {})
            .get(LABEL_GRAPH_REVISION_HASH, "")
        )
        if latest is None or latest_hash != wanted_hash:
            return await self._issue(rgd, status, wanted_hash, latest_number, cond)
        entry = self.registry.get(name, latest_number)
        assert entry is not None
        if entry.state is RevisionState.PENDING:
            cond(
                CONDITION_GRAPH_REVISIONS_RESOLVED,
                STATUS_UNKNOWN,
                REASON_WAITING_FOR_GRAPH_REVISION_COMPILATION,
                f"waiting for graph revision {latest_number} to compile",
            )
            return self._wait()
        if entry.state is RevisionState.FAILED or entry.graph is None:
            message = f"latest graph revision {latest_number} failed compilation"
            cond(CONDITION_GRAPH_REVISIONS_RESOLVED, STATUS_FALSE, REASON_FAILED, message)
            cond(
                CONDITION_GRAPH_ACCEPTED,
                STATUS_FALSE,
                REASON_INVALID_RESOURCE_GRAPH,
                entry.error or message,
            )
            return Result()
        cond(
            CONDITION_GRAPH_REVISIONS_RESOLVED,
            STATUS_TRUE,
            REASON_RESOLVED,
            f"revision {latest_number} compiled and active",
        )
        cond(
            CONDITION_GRAPH_ACCEPTED,
            STATUS_TRUE,
            REASON_VALID,
            "resource graph and schema are valid",
        )
        return await self._serve(rgd, status, entry.graph, latest_number, cond)

    async def _revisions(
        self, rgd: Mapping[str, Any]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """GraphRevisions of this RGD (direct read), adopting live ones it does not own (P-04)."""
        name, uid = str(_meta(rgd)["name"]), str(_meta(rgd).get("uid"))
        page = await self.client.list(GRAPH_REVISIONS, field_selector=f"spec.snapshot.name={name}")
        live: list[dict[str, Any]] = []
        terminating: list[dict[str, Any]] = []
        for item in page.get("items") or []:
            if _meta(item).get("deletionTimestamp"):
                terminating.append(item)
                continue
            owners = _meta(item).get("ownerReferences") or []
            if not any(o.get("uid") == uid and o.get("controller") for o in owners):
                adopted = copy.deepcopy(item)
                adopted["metadata"]["ownerReferences"] = [_owner_reference(rgd)]
                live.append(await self.client.update(GRAPH_REVISIONS, adopted))
                log.info("rgd.revision_adopted", revision=_meta(item).get("name"))
                continue
            live.append(item)
        return live, terminating

    async def _issue(
        self,
        rgd: dict[str, Any],
        status: dict[str, Any],
        wanted_hash: str,
        latest_number: int,
        cond: Any,
    ) -> Result:
        """Validate the spec; on success create the next GraphRevision (P-06)."""
        name = str(_meta(rgd)["name"])
        try:
            await build_graph_async(rgd, self.resolver, options=self.options.build)
        except GraphError as error:
            cond(CONDITION_GRAPH_ACCEPTED, STATUS_FALSE, REASON_INVALID_RESOURCE_GRAPH, str(error))
            status.pop("topologicalOrder", None)
            status.pop("resources", None)
            log.info("rgd.invalid", error=str(error))
            return Result()
        number = max(int(status.get("lastIssuedRevision") or 0), latest_number) + 1
        revision = {
            "apiVersion": GRAPH_REVISIONS.api_version,
            "kind": "GraphRevision",
            "metadata": {
                "name": graph_revision_name(name, number),
                "labels": {
                    LABEL_OWNED: OWNED_VALUE,
                    LABEL_KRO_VERSION: KRO_VERSION,
                    LABEL_RGD_NAME: name,
                    LABEL_GRAPH_REVISION_HASH: wanted_hash,
                },
                "ownerReferences": [_owner_reference(rgd)],
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
        await self.client.create(GRAPH_REVISIONS, revision)
        status["lastIssuedRevision"] = number
        cond(
            CONDITION_GRAPH_ACCEPTED,
            STATUS_TRUE,
            REASON_VALID,
            "resource graph and schema are valid",
        )
        cond(
            CONDITION_GRAPH_REVISIONS_RESOLVED,
            STATUS_UNKNOWN,
            REASON_WAITING_FOR_GRAPH_REVISION_COMPILATION,
            f"graph revision {number} issued and awaiting compilation",
        )
        log.info("rgd.revision_issued", revision=number, hash=wanted_hash)
        return self._wait()

    # -- serving -----------------------------------------------------------------------------

    async def _serve(
        self, rgd: dict[str, Any], status: dict[str, Any], graph: Graph, number: int, cond: Any
    ) -> Result:
        name, uid = str(_meta(rgd)["name"]), str(_meta(rgd).get("uid"))
        crd = copy.deepcopy(dict(graph.instance.crd))
        labels = crd.setdefault("metadata", {}).setdefault("labels", {})
        labels.update(
            {
                LABEL_OWNED: OWNED_VALUE,
                LABEL_KRO_VERSION: KRO_VERSION,
                LABEL_RGD_ID: uid,
                LABEL_RGD_NAME: name,
            }
        )
        allow = (_meta(rgd).get("annotations") or {}).get(
            ANNOTATION_ALLOW_BREAKING_CHANGES
        ) == ALLOW_BREAKING_CHANGES_VALUE
        try:
            await ensure_crd(self.client, crd, rgd_name=name, allow_breaking=allow)
        except (CRDError, KubeError) as error:
            cond(CONDITION_KIND_READY, STATUS_FALSE, REASON_FAILED, str(error))
            return Result(requeue_after_s=self.options.progress_requeue_delay_s)
        cond(
            CONDITION_KIND_READY,
            STATUS_TRUE,
            REASON_READY,
            f"kind {graph.instance.kind} has been accepted and ready",
        )
        try:
            await self._register(rgd, graph, number)
        except Exception as error:
            cond(CONDITION_CONTROLLER_READY, STATUS_FALSE, REASON_FAILED_TO_START, str(error))
            raise
        cond(CONDITION_CONTROLLER_READY, STATUS_TRUE, REASON_RUNNING, "controller is running")
        status["topologicalOrder"] = list(graph.topological_order)
        status["resources"] = graph.resources_status()
        await self._collect_revisions(name, number)
        return Result()

    async def _register(self, rgd: Mapping[str, Any], graph: Graph, number: int) -> None:
        """Register (or re-register on a new revision) the instance controller (P-07, R-19)."""
        uid, name = str(_meta(rgd).get("uid")), str(_meta(rgd)["name"])
        gvr = GVR(graph.instance.group, graph.instance.version, graph.instance.plural)
        served = self._served.get(uid)
        if served is not None and served.gvr == gvr and served.revision == number:
            return
        reconciler = InstanceReconciler(
            rgd_name=name,
            rgd_uid=uid,
            gvr=gvr,
            client=self.client,
            registry=self.registry,
            applier=self.applier,
            watches=self.dynamic.watches,
            options=self.options.instance,
        )
        await self.dynamic.register(
            gvr, reconciler.reconcile, should_enqueue_update=should_enqueue_update
        )
        self._served[uid] = _Served(gvr, number)
        log.info("rgd.serving", revision=number, gvr=str(gvr))

    async def _collect_revisions(self, name: str, current: int) -> None:
        """Keep the newest `max_graph_revisions` revisions; delete older ones (P-10)."""
        keep = self.options.max_graph_revisions
        if keep <= 0:
            return
        page = await self.client.list(GRAPH_REVISIONS, field_selector=f"spec.snapshot.name={name}")
        numbers = sorted(
            (int(i["spec"]["revision"]), i)
            for i in page.get("items") or []
            if not _meta(i).get("deletionTimestamp")
        )
        for number, item in numbers[:-keep] if len(numbers) > keep else []:
            if number >= current:
                continue
            try:
                await self.client.delete(GRAPH_REVISIONS, str(_meta(item)["name"]))
                log.info("rgd.revision_collected", revision=number)
            except KubeError as error:
                log.warning("rgd.revision_gc_failed", revision=number, error=str(error))

    # -- deletion, finalizer, status ---------------------------------------------------------

    async def _delete(self, rgd: dict[str, Any]) -> Result:
        """Deregister, delete the CRD only when allowed and owned, drop the finalizer (P-11)."""
        uid, name = str(_meta(rgd).get("uid")), str(_meta(rgd)["name"])
        served = self._served.pop(uid, None)
        if served is not None:
            await self.dynamic.deregister(served.gvr)
        if self.options.allow_crd_deletion:
            entry = self.registry.latest(name)
            if entry is not None and entry.graph is not None:
                crd_name = str(entry.graph.instance.crd["metadata"]["name"])
                await delete_crd_if_owned(self.client, crd_name, rgd_name=name)
        await remove_finalizer(self.client, RGDS, rgd, FINALIZER)
        log.info("rgd.deleted")
        return Result()

    async def _ensure_finalizer(self, rgd: dict[str, Any]) -> dict[str, Any]:
        finalizers = list(_meta(rgd).get("finalizers") or [])
        if FINALIZER in finalizers:
            return rgd
        patch = {"metadata": {"finalizers": [*finalizers, FINALIZER]}}
        return await self.client.patch(RGDS, str(_meta(rgd)["name"]), patch)

    async def _write_status(self, rgd: Mapping[str, Any], status: dict[str, Any]) -> None:
        """Root Ready + state (P-08), then write only when different."""
        generation = _meta(rgd).get("generation")
        conditions = status.get("conditions") or []
        root = aggregate_ready(conditions, RGD_DEPENDENT_CONDITIONS, generation=generation)
        set_condition(
            status,
            CONDITION_READY,
            str(root["status"]),
            now=now_rfc3339(),
            reason=str(root.get("reason", "")),
            message=str(root.get("message", "")),
            observed_generation=generation,
        )
        active = all(
            is_condition_true(status, c)
            for c in (CONDITION_GRAPH_ACCEPTED, CONDITION_KIND_READY, CONDITION_CONTROLLER_READY)
        )
        status["state"] = RGD_STATE_ACTIVE if active else RGD_STATE_INACTIVE
        if not active:
            status.pop("topologicalOrder", None) if not is_condition_true(
                status, CONDITION_GRAPH_ACCEPTED
            ) else None
        if rgd.get("status") == status:
            return
        body = copy.deepcopy(dict(rgd))
        body["status"] = status
        try:
            await self.client.update_status(RGDS, body)
        except NotFound:
            return


def _owner_reference(rgd: Mapping[str, Any]) -> dict[str, Any]:
    """GraphRevisions are controlled by their RGD, so RGD deletion cascades to them (B-08)."""
    return {
        "apiVersion": f"{KRO_DOMAIN}/{V1ALPHA1}",
        "kind": RGD_KIND,
        "name": str(_meta(rgd)["name"]),
        "uid": str(_meta(rgd).get("uid")),
        "controller": True,
    }
