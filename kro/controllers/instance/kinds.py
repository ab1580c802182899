"""kro.controllers.instance.kinds: which reconciler serves each kind an RGD generates.

The RGD controller decides *when* (a served revision, a deletion); `InstanceControllers` keeps
*what* is registered with the dynamic controller for every generated kind, and what is kept per
kind besides (metric series, condition-duration series):

* `serve(kind, revision)`: the normal `InstanceReconciler` of a live RGD (P-07); registering it
  over a draining reconciler takes the instances back.
* `release(rgd_name)`: the RGD is going or gone (P-11): every kind of it that still has
  instances is handed to a `DrainingReconciler` (kro.controllers.instance.draining, which says
  why), and a kind with none left is deregistered. The kinds come from what this process serves
  and, for a kind nobody served since a restart, from the kro-owned CRDs labelled with the RGD's
  name. Each instance gone calls `enqueue_rgd(rgd_name)`: the RGD controller releases again.

All registration changes happen inside RGD reconciles, which the RGD work queue serialises per
RGD name; nothing here runs concurrently for one RGD.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from kro.api.names import LABEL_RGD_ID, LABEL_RGD_NAME
from kro.api.objects import metadata as _meta
from kro.applyset import Applier
from kro.controllers.crd import CRDS
from kro.controllers.events import RecorderPool, recorder_name
from kro.controllers.failures import FailureReporter
from kro.controllers.instance.options import InstanceOptions
from kro.controllers.kind_waits import KindWaits
from kro.controllers.members import MEMBER_SYNC_TIMEOUT_S, ClusterWaits, RegistryMembers
from kro.controllers.metrics import (
    INSTANCE_FAILURES,
    CelMetrics,
    ConditionDurations,
    InstanceMetrics,
    RuntimeMetrics,
    gvr_string,
)
from kro.controllers.registry import RevisionRegistry
from kro.controllers.requeue import RequeueBackoff
from kro.dynamic import DynamicController
from kro.runtime.client import Client
from kro.runtime.errors import Forbidden, NotFound
from kro.runtime.events import EventRecorder
from kro.runtime.gvk import GVR

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Kind:
    """A kind an RGD generates: its GVR, Kind and CRD, and the RGD it belongs to."""

    gvr: GVR
    kind: str
    crd_name: str
    rgd_name: str
    rgd_uid: str

    @classmethod
    def of_crd(cls, crd: Mapping[str, Any]) -> Kind | None:
        """The kind a kro-generated CRD serves (None if it serves no version)."""
        spec, labels = crd.get("spec") or {}, _meta(crd).get("labels") or {}
        versions = [v for v in spec.get("versions") or [] if v.get("served", True)]
        if not versions:
            return None
        version = next((v for v in versions if v.get("storage")), versions[0])
        names = spec.get("names") or {}
        return cls(
            GVR(str(spec.get("group") or ""), str(version["name"]), str(names.get("plural"))),
            str(names.get("kind") or ""),
            str(_meta(crd).get("name")),
            str(labels.get(LABEL_RGD_NAME) or ""),
            str(labels.get(LABEL_RGD_ID) or ""),
        )


@dataclass(frozen=True, slots=True)
class _Served:
    kind: Kind
    revision: int


class InstanceControllers:
    """The instance reconcilers registered per generated kind; see the module docstring."""

    def __init__(
        self,
        *,
        client: Client,
        registry: RevisionRegistry,
        applier: Applier,
        dynamic: DynamicController,
        options: InstanceOptions,
        metrics: InstanceMetrics,
        runtime_metrics: RuntimeMetrics,
        cel_metrics: CelMetrics,
        condition_durations: ConditionDurations | None = None,
        recorders: RecorderPool | None = None,
        enqueue_rgd: Callable[[str], None] | None = None,
        kind_waits: KindWaits | None = None,
        members: RegistryMembers | None = None,
        own_cluster: str = "",
        cluster_waits: ClusterWaits | None = None,
    ) -> None:
        """`members`: the registry's member clusters (MultiCluster), for targets; `own_cluster`:
        the member whose instances these are (hub and spokes), "" for the hub.
        `enqueue_rgd(name)`: bring an RGD back to its controller's queue (None: a draining
        kind is let go of only at that RGD's next reconcile). `kind_waits`: where instances
        whose deferred nodes wait for a kind are remembered, for its CRD to wake them."""
        self._client = client
        self._dynamic = dynamic
        self._options = options
        self._metrics = metrics
        self._condition_durations = condition_durations
        self._recorders = recorders
        self._enqueue_rgd = enqueue_rgd or (lambda _: None)
        member_watches = None  # the instances' watches in member clusters, to this queue (M-14)
        if members is not None:
            member_watches = members.watches(
                lambda client: dynamic.coordinator(
                    dynamic.enqueue, client=client, sync_timeout_s=MEMBER_SYNC_TIMEOUT_S
                )
            )
        self._shared: dict[str, Any] = {
            "client": client,
            "registry": registry,
            "applier": applier,
            "options": options,
            "metrics": metrics,
            "runtime_metrics": runtime_metrics,
            "cel_metrics": cel_metrics,
            "condition_durations": condition_durations,
            "kind_waits": kind_waits,
            "members": members,
            "member_watches": member_watches,
            "own_cluster": own_cluster,
            "cluster_waits": cluster_waits,
        }
        """What every instance reconciler is built with, whatever its kind."""
        self._served: dict[str, _Served] = {}  # rgd uid -> the kind registered for it
        self._draining: dict[GVR, Kind] = {}  # kinds of deleted RGDs that still have instances
        # One per kind, kept across re-registrations (a new revision builds a new reconciler):
        # the last failure cause of each instance must survive it, or it would be logged again.
        self._failures: dict[GVR, FailureReporter] = {}
        self._waits: dict[GVR, RequeueBackoff] = {}
        """Per kind, the instances' streaks of waits (V-08): shared by the kind's reconcilers
        across revisions, so that a new revision does not restart a failing instance's
        backoff from the first delay."""

    def served(self) -> dict[str, GVR]:
        """RGD uid -> the kind served for that live RGD."""
        return {uid: s.kind.gvr for uid, s in self._served.items()}

    def draining(self) -> frozenset[GVR]:
        """Kinds of deleted RGDs still served for their remaining instances."""
        return frozenset(self._draining)

    # -- live RGDs -------------------------------------------------------------------------------

    async def serve(self, kind: Kind, revision: int) -> None:
        """Register (or re-register on a new revision) the instance reconciler (P-07, R-19)."""
        served = self._served.get(kind.rgd_uid)
        if served is not None and served.kind.gvr == kind.gvr and served.revision == revision:
            return
        if served is not None and served.kind.gvr != kind.gvr:
            del self._served[kind.rgd_uid]
            await self._deregister(served.kind)  # the RGD now generates another kind
        if kind.gvr not in self._failures:  # the kind's first reconciler
            self._metrics.initialise(gvr_string(kind.gvr))
            self._metrics.states.register(kind.rgd_name)
        await self._register(kind, draining=False)
        if self._draining.pop(kind.gvr, None) is not None:
            log.info("rgd.instances_taken_over", gvr=str(kind.gvr))
        self._served[kind.rgd_uid] = _Served(kind, revision)
        log.info("rgd.serving", revision=revision, gvr=str(kind.gvr))
        for uid, stale in list(self._served.items()):
            if uid != kind.rgd_uid and stale.kind.rgd_name == kind.rgd_name:
                del self._served[uid]  # an earlier RGD of this name whose deletion we missed
                if stale.kind.gvr != kind.gvr:
                    await self._drain(stale.kind)

    async def settle(self, rgd_name: str) -> None:
        """Kinds of an earlier RGD of this name still draining: let go of those with no
        instance left (the RGD was re-created, but its graph does not serve yet)."""
        for kind in [k for k in self._draining.values() if k.rgd_name == rgd_name]:
            await self._drain(kind)

    # -- deleted RGDs ----------------------------------------------------------------------------

    async def release(self, rgd_name: str) -> None:
        """The RGD is going or gone: drain each of its kinds that has instances, let go of
        the others."""
        kinds = {k.gvr: k for k in self._draining.values() if k.rgd_name == rgd_name}
        for uid, served in list(self._served.items()):
            if served.kind.rgd_name == rgd_name:
                del self._served[uid]
                kinds[served.kind.gvr] = served.kind
        page = await self._client.list(CRDS, label_selector=f"{LABEL_RGD_NAME}={rgd_name}")
        for crd in page.get("items") or []:
            kind = Kind.of_crd(crd)
            if kind is not None and kind.gvr not in kinds and not self._is_served(kind.gvr):
                kinds[kind.gvr] = kind
        for kind in kinds.values():
            await self._drain(kind)

    async def _drain(self, kind: Kind) -> None:
        """Serve `kind` with a DrainingReconciler while it has instances; else deregister."""
        if await self._has_instances(kind.gvr):
            if kind.gvr in self._draining:
                return
            await self._register(kind, draining=True)
            self._draining[kind.gvr] = kind
            log.info("rgd.draining", gvr=str(kind.gvr))
            return
        self._draining.pop(kind.gvr, None)
        await self._deregister(kind)

    async def _has_instances(self, gvr: GVR) -> bool:
        try:
            page = await self._client.list(gvr, limit=1, metadata_only=True)
        except NotFound:  # the CRD is gone, and its instances with it
            return False
        except Forbidden as error:
            # kro may not list the kind (V-15), so it could never watch, drain or release
            # its instances: waiting for them would only keep the RGD from being deleted.
            log.warning("rgd.instances_unlistable", gvr=str(gvr), error=str(error))
            return False
        return bool(page.get("items"))

    def _is_served(self, gvr: GVR) -> bool:
        return any(s.kind.gvr == gvr for s in self._served.values())

    async def _deregister(self, kind: Kind) -> None:
        """Stop reconciling `kind` and drop what was kept for it (unless an RGD serves it)."""
        if self._is_served(kind.gvr):
            return
        if self._dynamic.is_registered(kind.gvr):
            await self._dynamic.deregister(kind.gvr)
            log.info("rgd.kind_released", gvr=str(kind.gvr))
        if self._recorders is not None:
            self._recorders.release(recorder_name(kind.crd_name))
        gvr = gvr_string(kind.gvr)
        self._failures.pop(kind.gvr, None)
        self._waits.pop(kind.gvr, None)
        # The RGD's own series (by `rgd`) go only with its last kind: a re-created RGD of the
        # same name may already serve another one.
        rgd_kinds = [s.kind for s in self._served.values()] + list(self._draining.values())
        last = not any(k.rgd_name == kind.rgd_name and k.gvr != kind.gvr for k in rgd_kinds)
        self._metrics.forget(gvr, kind.rgd_name if last else None)
        if self._condition_durations is not None:
            self._condition_durations.evict_gvr(gvr)

    def _failures_of(self, kind: Kind, recorder: EventRecorder | None) -> FailureReporter:
        """The kind's FailureReporter, created (with its series at 0) on first use."""
        failures = self._failures.get(kind.gvr)
        if failures is None or failures.rgd != kind.rgd_name:
            failures = self._failures[kind.gvr] = FailureReporter(
                rgd=kind.rgd_name,
                event="instance.failed",
                counter=self._metrics.errors,
                reasons=INSTANCE_FAILURES,
                recorder=recorder,
            )
            failures.initialise()
        failures.recorder = recorder
        return failures

    async def _register(self, kind: Kind, *, draining: bool) -> None:
        """Serve `kind` with its instance reconciler, or (`draining`) a DrainingReconciler; the
        reconciler is imported with the first RGD (it loads CEL and the evaluator)."""
        from kro.controllers.instance.draining import DrainingReconciler
        from kro.controllers.instance.reconciler import (
            InstanceReconciler,
            probably_settled,
            should_enqueue_update,
        )

        recorder = (
            self._recorders.recorder(recorder_name(kind.crd_name)) if self._recorders else None
        )
        args = {
            **self._shared,
            "rgd_name": kind.rgd_name,
            "rgd_uid": kind.rgd_uid,
            "gvr": kind.gvr,
            "kind": kind.kind,
            "watches": self._dynamic.watches,
            "events": recorder if self._options.condition_events else None,
            "warnings": recorder,
            "failures": self._failures_of(kind, recorder),
            "waits": self._waits.setdefault(kind.gvr, self._options.backoff()),
        }
        reconciler = (
            DrainingReconciler(on_instance_gone=lambda: self._enqueue_rgd(kind.rgd_name), **args)
            if draining
            else InstanceReconciler(**args)
        )
        await self._dynamic.register(
            kind.gvr,
            reconciler.reconcile,
            should_enqueue_update=should_enqueue_update,
            probably_settled=None if draining else probably_settled,
        )
