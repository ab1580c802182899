"""kro.controllers.metrics: upstream kro's controller metrics (§1.R rows 3-12, 30-36, 38-64), and
kro-py's own failure counters and state gauges.

Names, types and label names copy upstream exactly, so dashboards built for upstream kro keep
working. One label format differs on purpose: every `gvr` label holds Go's
`GroupVersionResource.String()` (`group/version, Resource=plural`), the form most upstream
families use, also on `instance_state_transitions_total`, which upstream fills with the GVK
string, and on the dynamic-controller families (kro.dynamic._metrics), which upstream fills in
two formats. `name` is the RGD's name on upstream's `rgd_*` families; kro-py's families
(`instance_errors_total`, `rgd_errors_total`, `instances_by_state`) call it `rgd`. Everything
is recorded through the injected MetricsProvider, so the controllers never import
prometheus_client.

Each class is created once per provider and shared by every reconciler that records into it
(providers return the same metric for the same name).

Series labelled by an RGD's name or by a generated kind go away with it (`RGDMetrics.forget`,
`InstanceMetrics.forget`, through the provider's `remove`), so churning RGDs does not grow
/metrics without bound. The only exception is the record of the deletion itself,
`rgd_deletions_total` and `rgd_deletion_duration_seconds`: removing those right after counting
would make them invisible to every scrape.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from kro.api.names import (
    EVENT_CRD_INSTALL_FAILED,
    EVENT_DELETION_BLOCKED,
    EVENT_RECONCILE_FAILED,
    EVENT_RESOURCE_APPLY_FAILED,
    INSTANCE_STATE_ACTIVE,
    INSTANCE_STATE_DELETING,
    INSTANCE_STATE_ERROR,
    INSTANCE_STATE_IN_PROGRESS,
    REASON_FAILED_TO_START,
    REASON_INVALID_RESOURCE_GRAPH,
    REASON_MANAGEMENT_FAILED,
    REASON_MISSING_PERMISSIONS,
    REASON_RESOLUTION_FAILED,
    RGD_STATE_ACTIVE,
    RGD_STATE_INACTIVE,
)
from kro.controllers.statecounts import StateCounts
from kro.runtime.gvk import GVR
from kro.runtime.metrics import (
    NOOP,
    CallbackGaugeProvider,
    MetricsProvider,
    Removable,
    Sample,
)

RECONCILE_BUCKETS: Final = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
"""Upstream's instance reconcile buckets (0.01 ... 120 s)."""

# Label values (upstream's constants).
RESOLUTION_NOT_AVAILABLE: Final = "not_available"
RESOLUTION_FAILED: Final = "failed"
RESOLUTION_UNKNOWN_STATE: Final = "unknown_state"
ISSUE_NO_REVISION: Final = "no_revision"
ISSUE_SPEC_CHANGED: Final = "spec_changed"
WAIT_WARMING_UP: Final = "warming_up"
WAIT_COMPILING: Final = "compiling"
WAIT_SETTLING: Final = "settling"
RESULT_SERVE: Final = "serve"
RESULT_ISSUE: Final = "issue"
RESULT_WAIT: Final = "wait"
RESULT_FAILED: Final = "failed"
MISS_LATEST_NOT_WARMED: Final = "latest_not_warmed"
MISS_RUNTIME_ENTRY_MISSING: Final = "runtime_entry_missing"
COMPILE_SUCCESS: Final = "success"
COMPILE_FAILED: Final = "failed"

INSTANCE_FAILURES: Final = (
    EVENT_RESOURCE_APPLY_FAILED,
    EVENT_RECONCILE_FAILED,
    REASON_RESOLUTION_FAILED,
    REASON_MANAGEMENT_FAILED,
    EVENT_DELETION_BLOCKED,
)
"""Reasons of `instance_errors_total` (snake_case) and of the instances' Warning Events."""
RGD_FAILURES: Final = (
    REASON_INVALID_RESOURCE_GRAPH,
    EVENT_CRD_INSTALL_FAILED,
    REASON_FAILED_TO_START,
    REASON_MISSING_PERMISSIONS,
    EVENT_RECONCILE_FAILED,
)
"""Reasons of `rgd_errors_total` (snake_case) and of the RGDs' Warning Events."""
INSTANCE_STATES: Final = (
    INSTANCE_STATE_ACTIVE,
    INSTANCE_STATE_IN_PROGRESS,
    INSTANCE_STATE_ERROR,
    INSTANCE_STATE_DELETING,
)
"""The states kro writes to an instance's `status.state` (FAILED never is, §6 #12)."""
RGD_STATES: Final = (RGD_STATE_ACTIVE, RGD_STATE_INACTIVE)


def gvr_string(gvr: GVR) -> str:
    """Go's GVR.String(): `apps/v1, Resource=deployments`, core `/v1, Resource=configmaps`."""
    return f"{gvr.group}/{gvr.version}, Resource={gvr.resource}"


class InstanceMetrics:
    """Rows 30-36: instance reconciles, their outcome and the graph each one resolved; and
    kro-py's `instance_errors_total{rgd, reason}` and `instances_by_state{rgd, state}`.

    state_gauges: keep `instances_by_state` (a dict write per status write; see
    kro.controllers.statecounts). Off only to measure what it costs.
    """

    def __init__(self, provider: MetricsProvider = NOOP, *, state_gauges: bool = True) -> None:
        gvr = ("gvr",)
        self.state_transitions = provider.counter(
            "instance_state_transitions_total",
            "Total number of instance state transitions",
            ("gvr", "from_state", "to_state"),
        )
        self.reconcile_duration = provider.histogram(
            "instance_reconcile_duration_seconds",
            "Duration of instance reconciliations",
            gvr,
            RECONCILE_BUCKETS,
        )
        self.reconcile_total = provider.counter(
            "instance_reconcile_total", "Total number of instance reconciliations", gvr
        )
        self.reconcile_errors = provider.counter(
            "instance_reconcile_errors_total",
            "Total number of instance reconciliation errors",
            gvr,
        )
        self.errors = provider.counter(
            "instance_errors_total",
            "Instance failures a user must act on (a child apply refused, a failed reconcile, "
            "a graph that cannot be used, a blocked deletion), by RGD and reason (kro-py)",
            ("rgd", "reason"),
        )
        self.states = StateCounts(
            provider,
            "instances_by_state",
            "Instances of each RGD by status.state, as last written by kro (kro-py)",
            label="rgd",
            states=INSTANCE_STATES,
            enabled=state_gauges,
        )
        self.field_conflicts = provider.counter(
            "instance_field_conflicts_total",
            "Rounds in which another field manager changed a field kro applies, by what kro "
            "did: reapplied it, or yielded it for good (kro-py)",
            ("gvr", "manager", "outcome"),
        )
        self.resolution_success = provider.counter(
            "instance_graph_resolution_success_total",
            "Total number of successful graph resolutions for instances",
            gvr,
        )
        self.resolution_failures = provider.counter(
            "instance_graph_resolution_failures_total",
            "Total number of failed graph resolutions for instances",
            ("gvr", "reason"),
        )
        self.resolution_pending = provider.counter(
            "instance_graph_resolution_pending_total",
            "Total number of graph resolutions that found the latest revision pending",
            gvr,
        )

    def initialise(self, gvr: str) -> None:
        """Create a newly served kind's error series at 0, so that alerts on them see a
        series before the first error (kro-py's per-RGD ones: FailureReporter.initialise)."""
        self.reconcile_errors.inc(0, gvr=gvr)
        for reason in (RESOLUTION_NOT_AVAILABLE, RESOLUTION_FAILED, RESOLUTION_UNKNOWN_STATE):
            self.resolution_failures.inc(0, gvr=gvr, reason=reason)

    def forget(self, gvr: str, rgd: str | None = None) -> None:
        """Drop the series of one generated kind (its `gvr` label) and, given `rgd`, of its
        RGD's kro-py families, with whatever other labels they were recorded under."""
        family: Removable
        for family in (
            self.state_transitions,
            self.reconcile_duration,
            self.reconcile_total,
            self.reconcile_errors,
            self.field_conflicts,
            self.resolution_success,
            self.resolution_failures,
            self.resolution_pending,
        ):
            family.remove(gvr=gvr)
        if rgd is not None:
            self.errors.remove(rgd=rgd)
            self.states.drop(rgd)


class RGDMetrics:
    """Rows 38-49: graph builds, RGD state, deletions and GraphRevision resolution; and
    kro-py's `rgd_errors_total{rgd, reason}` and `rgds_by_state{state}`."""

    def __init__(self, provider: MetricsProvider = NOOP, *, state_gauges: bool = True) -> None:
        name = ("name",)
        self.errors = provider.counter(
            "rgd_errors_total",
            "RGD failures a user must act on (an invalid graph, a CRD that cannot be "
            "installed, missing permissions), by RGD and reason (kro-py)",
            ("rgd", "reason"),
        )
        self.states = StateCounts(
            provider,
            "rgds_by_state",
            "ResourceGraphDefinitions by status.state, as last written by kro (kro-py)",
            label="",
            states=RGD_STATES,
            enabled=state_gauges,
        )
        self.states.register()
        self.build_total = provider.counter(
            "rgd_graph_build_total", "Total number of graph builds per RGD", name
        )
        self.build_duration = provider.histogram(
            "rgd_graph_build_duration_seconds", "Duration of graph builds per RGD", name
        )
        self.build_errors = provider.counter(
            "rgd_graph_build_errors_total", "Total number of failed graph builds per RGD", name
        )
        self.state_transitions = provider.counter(
            "rgd_state_transitions_total",
            "Total number of RGD state transitions",
            ("name", "from", "to"),
        )
        self.deletions = provider.counter(
            "rgd_deletions_total", "Total number of RGD deletions", name
        )
        self.deletion_duration = provider.histogram(
            "rgd_deletion_duration_seconds", "Duration of RGD deletion clean-up", name
        )
        self.revision_issue = provider.counter(
            "rgd_graph_revision_issue_total",
            "Total number of GraphRevisions issued, by reason",
            ("reason",),
        )
        self.revision_wait = provider.counter(
            "rgd_graph_revision_wait_total",
            "Total number of reconciles that waited for a GraphRevision, by reason",
            ("reason",),
        )
        self.revision_resolution = provider.counter(
            "rgd_graph_revision_resolution_total",
            "Total number of GraphRevision resolutions, by result",
            ("result",),
        )
        self.registry_miss = provider.counter(
            "rgd_graph_revision_registry_miss_total",
            "Total number of revision registry lookups that found no usable entry",
            ("reason",),
        )
        self.gc_deleted = provider.counter(
            "rgd_graph_revision_gc_deleted_total", "Total number of GraphRevisions collected"
        )
        self.gc_errors = provider.counter(
            "rgd_graph_revision_gc_errors_total",
            "Total number of failed GraphRevision garbage collections",
        )

    def forget(self, name: str) -> None:
        """Drop the series of a deleted RGD, except the record of its deletion (see module)."""
        family: Removable
        for family in (
            self.build_total,
            self.build_duration,
            self.build_errors,
            self.state_transitions,
        ):
            family.remove(name=name)
        self.errors.remove(rgd=name)
        self.states.forget(name)


class GraphRevisionMetrics:
    """Rows 50-54: compiling GraphRevisions into the registry."""

    def __init__(self, provider: MetricsProvider = NOOP) -> None:
        result = ("result",)
        self.compile_total = provider.counter(
            "graph_revision_compile_total", "Total number of GraphRevision compilations", result
        )
        self.compile_duration = provider.histogram(
            "graph_revision_compile_duration_seconds",
            "Duration of GraphRevision compilations",
            result,
        )
        self.status_update_errors = provider.counter(
            "graph_revision_status_update_errors_total",
            "Total number of failed GraphRevision status updates",
        )
        self.activation_deferred = provider.counter(
            "graph_revision_activation_deferred_total",
            "Total number of activations deferred because the status update failed",
        )
        self.finalizer_evictions = provider.counter(
            "graph_revision_finalizer_evictions_total",
            "Total number of registry entries evicted by GraphRevision deletion",
        )


WATCH_KIND_SCALAR: Final = "scalar"
WATCH_KIND_COLLECTION: Final = "collection"
"""`kind` label values of `graphengine_watch_request_count`: a watch for one named object, or
for a selector over many."""


class GraphEngineMetrics:
    """V-85: the Graph watch router, registered only with the GraphKind gate (KroApp), so an
    install without Graphs exports none of these series.

    watch_owners: Graphs the router tracks. watch_requests{gvr, kind}: watch requests the
    Graphs registered, by GVR and `scalar`/`collection`. routed{gvr}: events the router saw;
    matched{gvr}: those that matched at least one Graph (the difference is what watching
    cluster-wide costs). Every `gvr` is `gvr_string`'s form, as on the other families.
    """

    def __init__(self, provider: MetricsProvider = NOOP) -> None:
        gvr = ("gvr",)
        self.watch_owners = provider.gauge(
            "graphengine_watch_owner_count", "Number of Graphs tracked by the watch router"
        )
        self.watch_requests = provider.gauge(
            "graphengine_watch_request_count",
            "Number of watch requests registered by Graphs, by GVR and scalar or collection",
            ("gvr", "kind"),
        )
        self.routed = provider.counter(
            "graphengine_route_total", "Total number of watch events routed to Graphs", gvr
        )
        self.matched = provider.counter(
            "graphengine_route_match_total",
            "Total number of routed watch events that matched at least one Graph",
            gvr,
        )


class _Relabelled:
    """One family under the coordinator's label names: `rename` maps them to the family's own,
    `drop` names labels the family does not have."""

    def __init__(
        self, series: Any, rename: Mapping[str, str] | None = None, drop: Sequence[str] = ()
    ) -> None:
        self._series = series
        self._rename = dict(rename or {})
        self._drop = frozenset(drop)

    def _labels(self, labels: Mapping[str, str]) -> dict[str, str]:
        return {self._rename.get(k, k): v for k, v in labels.items() if k not in self._drop}

    def set(self, value: float, **labels: str) -> None:
        self._series.set(value, **self._labels(labels))

    def inc(self, amount: float = 1, **labels: str) -> None:
        self._series.inc(amount, **self._labels(labels))

    def remove(self, **labels: str) -> None:
        found = self._labels(labels)
        if found:
            self._series.remove(**found)
        else:  # an unlabelled gauge: nothing left to count
            self._series.set(0)


class GraphRouterMetrics:
    """The Graphs' watch coordinator (kro.dynamic's `RouterMetrics`) recorded as the
    graphengine_* families of V-85 instead of the instances' dynamic_controller_* ones."""

    def __init__(self, graph: GraphEngineMetrics) -> None:
        self.instance_watch_count = _Relabelled(graph.watch_owners, drop=("parent_gvr",))
        self.watch_request_count = _Relabelled(graph.watch_requests, rename={"type": "kind"})
        self.route_total = _Relabelled(graph.routed)
        self.route_match_total = _Relabelled(graph.matched)

    def forget_routes(self, gvr: GVR) -> None:
        self.route_total.remove(gvr=gvr_string(gvr))
        self.route_match_total.remove(gvr=gvr_string(gvr))

    def forget_informer(self, gvr: GVR) -> None:
        return None  # informers are the dynamic controller's, and so are their series


class RegistryMetrics:
    """Rows 55-57: the in-memory revision registry."""

    def __init__(self, provider: MetricsProvider = NOOP) -> None:
        self.entries = provider.gauge(
            "graph_revision_registry_entries",
            "Number of graph revisions held in the registry, by state",
            ("state",),
        )
        self.transitions = provider.counter(
            "graph_revision_registry_transitions_total",
            "Total number of registry state transitions",
            ("from", "to"),
        )
        self.evictions = provider.counter(
            "graph_revision_registry_evictions_total",
            "Total number of registry entries evicted",
        )

    def record_counts(self, counts: Mapping[str, int]) -> None:
        """Set the entries gauge for every state (states with no entry read 0)."""
        for state, count in counts.items():
            self.entries.set(count, state=str(state))


COLLECTION_SIZE_BUCKETS: Final = tuple(float(2**i) for i in range(10))
"""1, 2, 4 ... 512 items (row 12)."""
SCHEMA_CALL_BUCKETS: Final = tuple(0.01 * 2**i for i in range(10))
"""0.01 s doubling, 10 buckets (row 62)."""


class CelMetrics:
    """Rows 1-2: every CEL evaluation of an instance reconcile. kro.graph.evaluate keeps the
    durations (it records nothing itself); the instance controller hands them over here."""

    def __init__(self, provider: MetricsProvider = NOOP) -> None:
        self.eval_total = provider.counter(
            "cel_expr_eval_total", "Total number of CEL expression evaluations"
        )
        self.eval_duration = provider.histogram(
            "cel_expr_eval_duration_seconds", "Duration of CEL expression evaluations"
        )

    def record(self, durations_s: Sequence[float]) -> None:
        if not durations_s:
            return
        self.eval_total.inc(len(durations_s))
        for duration in durations_s:
            self.eval_duration.observe(duration)


class RuntimeMetrics:
    """Rows 3-12: per-instance graph evaluation (upstream's `pkg/runtime`), recorded by the
    instance controller around `kro.graph.evaluate`, which itself stays pure."""

    def __init__(self, provider: MetricsProvider = NOOP) -> None:
        self.node_eval_total = provider.counter(
            "runtime_node_eval_total", "Total number of node evaluations"
        )
        self.node_eval_duration = provider.histogram(
            "runtime_node_eval_duration_seconds", "Duration of node evaluations"
        )
        self.node_eval_errors = provider.counter(
            "runtime_node_eval_errors_total", "Total number of failed node evaluations"
        )
        self.creation_total = provider.counter(
            "runtime_creation_total", "Total number of runtimes created from a graph"
        )
        self.creation_duration = provider.histogram(
            "runtime_creation_duration_seconds", "Duration of runtime creation"
        )
        self.ignored_checks = provider.counter(
            "runtime_node_ignored_check_total", "Total number of includeWhen checks"
        )
        self.ignored = provider.counter(
            "runtime_node_ignored_total", "Total number of nodes skipped by includeWhen"
        )
        self.ready_checks = provider.counter(
            "runtime_node_ready_check_total", "Total number of node readiness checks"
        )
        self.not_ready = provider.counter(
            "runtime_node_not_ready_total",
            "Total number of readiness checks that found a node not ready",
        )
        self.collection_size = provider.histogram(
            "runtime_collection_size",
            "Number of items a forEach collection expanded to",
            (),
            COLLECTION_SIZE_BUCKETS,
        )


class SchemaResolverMetrics:
    """Rows 58-64: the controller's OpenAPI schema cache."""

    def __init__(self, provider: MetricsProvider = NOOP) -> None:
        self.hits = provider.counter(
            "schema_resolver_cache_hits_total", "Total number of schema cache hits"
        )
        self.misses = provider.counter(
            "schema_resolver_cache_misses_total", "Total number of schema cache misses"
        )
        self.size = provider.gauge("schema_resolver_cache_size", "Number of schemas cached")
        self.evictions = provider.counter(
            "schema_resolver_cache_evictions_total", "Total number of schemas evicted"
        )
        self.api_call_duration = provider.histogram(
            "schema_resolver_api_call_duration_seconds",
            "Duration of schema discovery calls to the API server",
            (),
            SCHEMA_CALL_BUCKETS,
        )
        self.deduplicated = provider.counter(
            "schema_resolver_singleflight_deduplicated_total",
            "Total number of concurrent schema lookups served by one in-flight call",
        )
        self.errors = provider.counter(
            "schema_resolver_errors_total", "Total number of failed schema lookups"
        )


class ConditionDurations:
    """Row 37 (`InstanceConditionMetrics` gate): seconds each instance condition has held its
    current status, computed at scrape time from `lastTransitionTime`.

    Series are labelled gvr, namespace, name, condition_type, condition_status, reason; they
    disappear when the condition does, when the instance is gone and when its RGD is deleted.
    Needs a provider that supports scrape-time gauges; with any other provider it records
    nothing.
    """

    def __init__(self, provider: MetricsProvider = NOOP) -> None:
        self._conditions: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
        self.enabled = isinstance(provider, CallbackGaugeProvider)
        if isinstance(provider, CallbackGaugeProvider):
            provider.callback_gauge(
                "instance_condition_current_status_seconds",
                "Seconds since each instance condition last changed status",
                ("gvr", "namespace", "name", "condition_type", "condition_status", "reason"),
                self.samples,
            )

    def update(self, gvr: str, namespace: str, name: str, conditions: Sequence[Any]) -> None:
        if self.enabled:
            self._conditions[(gvr, namespace, name)] = [
                c for c in conditions if isinstance(c, Mapping) and c.get("lastTransitionTime")
            ]

    def evict(self, gvr: str, namespace: str, name: str) -> None:
        self._conditions.pop((gvr, namespace, name), None)

    def evict_gvr(self, gvr: str) -> None:
        for key in [k for k in self._conditions if k[0] == gvr]:
            del self._conditions[key]

    def samples(self) -> Iterator[Sample]:
        now = dt.datetime.now(dt.UTC)
        for (gvr, namespace, name), conditions in list(self._conditions.items()):
            for condition in conditions:
                try:
                    since = dt.datetime.fromisoformat(
                        str(condition["lastTransitionTime"]).replace("Z", "+00:00")
                    )
                except ValueError:
                    continue
                yield (
                    {
                        "gvr": gvr,
                        "namespace": namespace,
                        "name": name,
                        "condition_type": str(condition.get("type", "")),
                        "condition_status": str(condition.get("status", "")),
                        "reason": str(condition.get("reason", "")),
                    },
                    max((now - since).total_seconds(), 0.0),
                )
