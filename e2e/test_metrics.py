"""kro's /metrics on the real control plane: every metric of reference §1.R, under upstream's names.

One controller runs in-process (admin credentials are fine here) with the feature gate
InstanceConditionMetrics on, reconciles examples/nginxapp to ACTIVE and then deletes it, and
/metrics is scraped over HTTP at both points, as Prometheus would. Each metric name is its own
test: present, with upstream's type and label names. Further tests check the label values that
dashboards key on: the two controller-runtime controllers, the `dynamic-controller-queue`, and
the instance kind in the dynamic-controller and instance families.

kro-py's own families (KRO_PY: failure counters, state gauges, field conflicts) are checked the
same way, and so is the hygiene of the whole page: no `*_created` series, one format for every
`gvr` label, error counters present at 0 before any error, state gauges that agree with the
cluster, and every series of the RGD gone once it is deleted.

METRICS_NOT_IMPLEMENTED_YET lists the names the Python controller does not export yet. Their
tests are expected failures (pytest.xfail with the name); once a name is exported its test fails
until the name is removed from the list, so the list cannot go stale.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from inprocess_controller import InProcessController, Scrape
from nginxapp_example import DYNAMIC_GVR_KEY, GVR_STRING, NginxApp, install_kro_crds

from kro.testing.adminapi import AdminApi
from kro.testing.pytest_plugin import ClusterHandle, create_namespace
from kro.testing.wait import wait_for

# Names from the tables below that the controller does not export yet (see the module docstring).
METRICS_NOT_IMPLEMENTED_YET: frozenset[str] = frozenset()

# Series of exported names that are missing for one queue: (sample name, `name` label).
QUEUE_SERIES_NOT_IMPLEMENTED_YET: frozenset[tuple[str, str]] = frozenset()

# Reference §1.R: (name, type, label names). Rows 1-69 in order, then controller-runtime and
# client-go workqueue metrics.
CEL_AND_RUNTIME = [
    ("cel_expr_eval_total", "counter", ()),
    ("cel_expr_eval_duration_seconds", "histogram", ()),
    ("runtime_node_eval_total", "counter", ()),
    ("runtime_node_eval_duration_seconds", "histogram", ()),
    ("runtime_node_eval_errors_total", "counter", ()),
    ("runtime_creation_total", "counter", ()),
    ("runtime_creation_duration_seconds", "histogram", ()),
    ("runtime_node_ignored_check_total", "counter", ()),
    ("runtime_node_ignored_total", "counter", ()),
    ("runtime_node_ready_check_total", "counter", ()),
    ("runtime_node_not_ready_total", "counter", ()),
    ("runtime_collection_size", "histogram", ()),
]
DYNAMIC_CONTROLLER = [
    ("dynamic_controller_reconcile_total", "counter", ("gvr",)),
    ("dynamic_controller_requeue_total", "counter", ("gvr", "type")),
    ("dynamic_controller_reconcile_duration_seconds", "histogram", ("gvr",)),
    ("dynamic_controller_gvr_count", "gauge", ()),
    ("dynamic_controller_queue_length", "gauge", ()),
    ("dynamic_controller_handler_count_total", "gauge", ("type",)),
    ("dynamic_controller_handler_attach_total", "counter", ("type",)),
    ("dynamic_controller_handler_detach_total", "counter", ("type",)),
    ("dynamic_controller_handler_errors_total", "counter", ("gvr",)),
    ("dynamic_controller_reconcile_panics_total", "counter", ("gvr",)),
    ("dynamic_controller_informer_sync_duration_seconds", "histogram", ("gvr",)),
    ("dynamic_controller_informer_events_total", "counter", ("gvr", "event_type")),
    ("dynamic_controller_watch_count", "gauge", ()),
    ("dynamic_controller_instance_watch_count", "gauge", ("parent_gvr",)),
    ("dynamic_controller_watch_request_count", "gauge", ("gvr", "type")),
    ("dynamic_controller_route_total", "counter", ("gvr",)),
    ("dynamic_controller_route_match_total", "counter", ("gvr",)),
]
INSTANCE = [
    ("instance_state_transitions_total", "counter", ("gvr", "from_state", "to_state")),
    ("instance_reconcile_duration_seconds", "histogram", ("gvr",)),
    ("instance_reconcile_total", "counter", ("gvr",)),
    ("instance_reconcile_errors_total", "counter", ("gvr",)),
    ("instance_graph_resolution_success_total", "counter", ("gvr",)),
    ("instance_graph_resolution_failures_total", "counter", ("gvr", "reason")),
    ("instance_graph_resolution_pending_total", "counter", ("gvr",)),
    (
        "instance_condition_current_status_seconds",
        "gauge",
        ("gvr", "namespace", "name", "condition_type", "condition_status", "reason"),
    ),
]
RGD = [
    ("rgd_graph_build_total", "counter", ("name",)),
    ("rgd_graph_build_duration_seconds", "histogram", ("name",)),
    ("rgd_graph_build_errors_total", "counter", ("name",)),
    ("rgd_state_transitions_total", "counter", ("name", "from", "to")),
    ("rgd_deletions_total", "counter", ("name",)),
    ("rgd_deletion_duration_seconds", "histogram", ("name",)),
    ("rgd_graph_revision_issue_total", "counter", ("reason",)),
    ("rgd_graph_revision_wait_total", "counter", ("reason",)),
    ("rgd_graph_revision_resolution_total", "counter", ("result",)),
    ("rgd_graph_revision_registry_miss_total", "counter", ("reason",)),
    ("rgd_graph_revision_gc_deleted_total", "counter", ()),
    ("rgd_graph_revision_gc_errors_total", "counter", ()),
]
GRAPH_REVISION = [
    ("graph_revision_compile_total", "counter", ("result",)),
    ("graph_revision_compile_duration_seconds", "histogram", ("result",)),
    ("graph_revision_status_update_errors_total", "counter", ()),
    ("graph_revision_activation_deferred_total", "counter", ()),
    ("graph_revision_finalizer_evictions_total", "counter", ()),
    ("graph_revision_registry_entries", "gauge", ("state",)),
    ("graph_revision_registry_transitions_total", "counter", ("from", "to")),
    ("graph_revision_registry_evictions_total", "counter", ()),
]
SCHEMA_RESOLVER = [
    ("schema_resolver_cache_hits_total", "counter", ()),
    ("schema_resolver_cache_misses_total", "counter", ()),
    ("schema_resolver_cache_size", "gauge", ()),
    ("schema_resolver_cache_evictions_total", "counter", ()),
    ("schema_resolver_api_call_duration_seconds", "histogram", ()),
    ("schema_resolver_singleflight_deduplicated_total", "counter", ()),
    ("schema_resolver_errors_total", "counter", ()),
]
# Rows 65-69 with the label names the Python client uses; docs/metrics.md documents the extra
# `host` label (and `verb` for `method`), which aggregations over upstream's labels tolerate.
REST_CLIENT = [
    ("rest_client_request_duration_seconds", "histogram", ("verb", "host")),
    ("rest_client_rate_limiter_duration_seconds", "histogram", ("verb", "host")),
    ("rest_client_request_size_bytes", "histogram", ("verb", "host")),
    ("rest_client_response_size_bytes", "histogram", ("verb", "host")),
    ("rest_client_request_retries_total", "counter", ("code", "verb", "host")),
]
CONTROLLER_RUNTIME = [
    ("controller_runtime_reconcile_total", "counter", ("controller", "result")),
    ("controller_runtime_reconcile_time_seconds", "histogram", ("controller",)),
    ("controller_runtime_reconcile_errors_total", "counter", ("controller",)),
    ("controller_runtime_terminal_reconcile_errors_total", "counter", ("controller",)),
    ("controller_runtime_reconcile_panics_total", "counter", ("controller",)),
    ("controller_runtime_max_concurrent_reconciles", "gauge", ("controller",)),
    ("controller_runtime_active_workers", "gauge", ("controller",)),
]
WORKQUEUE = [
    ("workqueue_adds_total", "counter", ("name",)),
    ("workqueue_depth", "gauge", ("name",)),
    ("workqueue_queue_duration_seconds", "histogram", ("name",)),
    ("workqueue_work_duration_seconds", "histogram", ("name",)),
    ("workqueue_retries_total", "counter", ("name",)),
    ("workqueue_longest_running_processor_seconds", "gauge", ("name",)),
    ("workqueue_unfinished_work_seconds", "gauge", ("name",)),
]
KRO_PY = [
    ("instance_errors_total", "counter", ("rgd", "reason")),
    ("rgd_errors_total", "counter", ("rgd", "reason")),
    ("instances_by_state", "gauge", ("rgd", "state")),
    ("rgds_by_state", "gauge", ("state",)),
    ("instance_field_conflicts_total", "counter", ("gvr", "manager", "outcome")),
]
ALL_METRICS = (
    CEL_AND_RUNTIME
    + DYNAMIC_CONTROLLER
    + INSTANCE
    + RGD
    + GRAPH_REVISION
    + SCHEMA_RESOLVER
    + REST_CLIENT
    + CONTROLLER_RUNTIME
    + WORKQUEUE
    + KRO_PY
)
assert len(CEL_AND_RUNTIME + DYNAMIC_CONTROLLER + INSTANCE + RGD + GRAPH_REVISION) == 57
assert len(ALL_METRICS) == 69 + 14 + len(KRO_PY)
assert {name for name, _, _ in ALL_METRICS} >= METRICS_NOT_IMPLEMENTED_YET

CONTROLLERS = ("ResourceGraphDefinition", "graphrevision")  # controller-runtime `controller`
DYNAMIC_QUEUE = "dynamic-controller-queue"
GVR_LABEL = re.compile(r"^[a-z0-9.-]*/[a-z0-9]+, Resource=[a-z0-9.-]+$")
"""Every `gvr` / `parent_gvr` value: Go's GroupVersionResource.String() (core group empty)."""
RGD_NAME = "reviewed-nginxapps"  # examples/nginxapp/rgd.yaml


@dataclass(frozen=True)
class Scrapes:
    """/metrics while the instance is ACTIVE, and after the instance and RGD were deleted."""

    active: Scrape
    deleted: Scrape
    gauges: dict[str, float]  # instances_by_state (ours) and rgds_by_state, by state
    cluster: dict[str, float]  # the same, counted from the cluster at the same moment

    def type_of(self, name: str) -> str | None:
        return self.active.types.get(name) or self.deleted.types.get(name)

    def label_names(self, name: str) -> set[str]:
        return self.active.label_names(name) | self.deleted.label_names(name)


@pytest.fixture(scope="module")
def scrapes(kube_cluster: ClusterHandle, kube_admin: AdminApi) -> Iterator[Scrapes]:
    namespace = f"kro-metrics-{secrets.token_hex(4)}"
    create_namespace(kube_admin, namespace)
    install_kro_crds(kube_admin)
    app = NginxApp(kube_admin, namespace)
    controller = InProcessController(
        kube_cluster.kubeconfig, ["--feature-gates=InstanceConditionMetrics=true"]
    ).start()
    try:
        app.apply_rgd()
        app.apply_instance()
        # The reconcile that wrote ACTIVE records the transition once the API server answered
        # its status write, a moment after ACTIVE can be read back: wait for the record.
        def reconciled() -> Scrape | None:
            scrape = controller.metrics()
            found = scrape.total("dynamic_controller_reconcile_total", gvr=DYNAMIC_GVR_KEY)
            moved = scrape.total(
                "instance_state_transitions_total", gvr=GVR_STRING, to_state="ACTIVE"
            )
            return scrape if found > 0 and moved > 0 else None

        active = wait_for(reconciled, timeout_s=30, what="the instance's reconciles in /metrics")
        # The gauges and a LIST of the cluster agree (other modules' RGDs count too).
        seen: list[tuple[dict[str, float], dict[str, float]]] = []

        def agree() -> bool:
            pair = _state_gauges(controller.metrics()), _cluster_states(kube_admin, namespace)
            seen.append(pair)
            return pair[0] == pair[1]

        wait_for(agree, timeout_s=30, what="state gauges that match the cluster")
        gauges, cluster = seen[-1]
        app.delete()
        # Likewise the RGD's deletion is counted after its finalizer is gone, i.e. after the
        # RGD already reads as deleted.
        def deletion_counted() -> Scrape | None:
            scrape = controller.metrics()
            return scrape if scrape.total("rgd_deletions_total", name=RGD_NAME) > 0 else None

        deleted = wait_for(deletion_counted, timeout_s=30, what="the RGD deletion in /metrics")
        yield Scrapes(active=active, deleted=deleted, gauges=gauges, cluster=cluster)
    finally:
        try:
            app.delete()
        finally:
            controller.stop()
            app.delete_generated_crd()
            kube_admin.delete(f"/api/v1/namespaces/{namespace}")


def _state_gauges(scrape: Scrape) -> dict[str, float]:
    ours = scrape.select("instances_by_state", rgd=RGD_NAME)
    found = {f"instance/{s.labels['state']}": s.value for s in ours if s.value}
    rgds = scrape.select("rgds_by_state")
    return found | {f"rgd/{s.labels['state']}": s.value for s in rgds if s.value}


def _cluster_states(admin: AdminApi, namespace: str) -> dict[str, float]:
    counted: dict[str, float] = {}
    rgds = admin.request("GET", "/apis/kro.run/v1alpha1/resourcegraphdefinitions")["items"]
    instances = admin.request(
        "GET", f"/apis/platform.example.com/v1alpha1/namespaces/{namespace}/nginxapps"
    )["items"]
    for prefix, items in (("rgd", rgds), ("instance", instances)):
        for item in items:
            key = f"{prefix}/{(item.get('status') or {}).get('state') or ''}"
            counted[key] = counted.get(key, 0) + 1
    return counted


def require(scrapes: Scrapes, name: str) -> None:
    """Fail unless `name` is exported; a name known to be missing is an expected failure."""
    if scrapes.type_of(name) is not None:
        return
    if name in METRICS_NOT_IMPLEMENTED_YET:
        pytest.xfail(reason=f"metric not implemented yet: {name}")
    pytest.fail(f"/metrics has no {name}")


@pytest.mark.parametrize(
    ("name", "kind", "labels"), ALL_METRICS, ids=[name for name, _, _ in ALL_METRICS]
)
def test_metric_is_exported_with_upstream_type_and_labels(
    scrapes: Scrapes, name: str, kind: str, labels: tuple[str, ...]
) -> None:
    require(scrapes, name)
    if name in METRICS_NOT_IMPLEMENTED_YET:
        pytest.fail(f"{name} is exported now: remove it from METRICS_NOT_IMPLEMENTED_YET")
    assert scrapes.type_of(name) == kind
    seen = scrapes.label_names(name)
    if seen:  # a family with no series yet shows only its HELP and TYPE lines
        assert seen == set(labels)


def test_controller_runtime_metrics_cover_both_controllers(scrapes: Scrapes) -> None:
    active = scrapes.active
    for controller in CONTROLLERS:
        assert active.total("controller_runtime_reconcile_total", controller=controller) > 0
        assert active.total("controller_runtime_reconcile_time_seconds_count",
                            controller=controller) > 0
        assert active.total("controller_runtime_max_concurrent_reconciles",
                            controller=controller) == 1
        assert active.select("controller_runtime_active_workers", controller=controller)
    results = {s.labels["result"] for s in active.select("controller_runtime_reconcile_total")}
    assert results <= {"success", "error", "requeue", "requeue_after"}
    assert "success" in results


# (sample, queue): every queue, the shared instance queue included, reports each of these.
QUEUE_SERIES = [
    (sample, queue)
    for queue in (DYNAMIC_QUEUE, *CONTROLLERS)
    for sample in (
        "workqueue_adds_total",
        "workqueue_depth",
        "workqueue_queue_duration_seconds_count",
        "workqueue_work_duration_seconds_count",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
    )
]


@pytest.mark.parametrize(
    ("sample", "queue"), QUEUE_SERIES, ids=[f"{q}-{s}" for s, q in QUEUE_SERIES]
)
def test_workqueue_series_include_the_dynamic_controller_queue(
    scrapes: Scrapes, sample: str, queue: str
) -> None:
    found = scrapes.active.select(sample, name=queue)
    if not found and (sample, queue) in QUEUE_SERIES_NOT_IMPLEMENTED_YET:
        pytest.xfail(reason=f"metric not implemented yet: {sample}{{name={queue!r}}}")
    if (sample, queue) in QUEUE_SERIES_NOT_IMPLEMENTED_YET:
        pytest.fail(f"{sample}{{name={queue!r}}} is exported now: remove it from "
                    "QUEUE_SERIES_NOT_IMPLEMENTED_YET")
    assert found, f"no {sample}{{name={queue!r}}}"
    if sample.endswith(("_total", "_count")):
        assert sum(s.value for s in found) > 0


def test_rest_client_metrics_count_the_controllers_requests(scrapes: Scrapes) -> None:
    active = scrapes.active
    verbs = {s.labels["verb"] for s in active.select("rest_client_request_duration_seconds_count")}
    assert {"GET", "PATCH"} <= verbs
    assert active.total("rest_client_request_duration_seconds_count") > 0
    assert active.total("rest_client_requests_total", code="200") > 0


def test_dynamic_controller_metrics_label_the_instance_kind(scrapes: Scrapes) -> None:
    active = scrapes.active
    assert active.total("dynamic_controller_reconcile_total", gvr=DYNAMIC_GVR_KEY) > 0
    assert active.total("dynamic_controller_reconcile_duration_seconds_count",
                        gvr=DYNAMIC_GVR_KEY) > 0
    requeues = {s.labels["type"] for s in
                active.select("dynamic_controller_requeue_total", gvr=DYNAMIC_GVR_KEY)}
    assert requeues <= {"no_requeue", "requeue", "requeue_after", "rate_limited"}
    assert active.total("dynamic_controller_gvr_count") >= 1
    assert active.total("dynamic_controller_handler_count_total", type="parent") >= 1
    assert active.total("dynamic_controller_handler_attach_total", type="parent") >= 1
    assert active.total("dynamic_controller_informer_events_total",
                        gvr=GVR_STRING, event_type="add") >= 1
    assert active.total("dynamic_controller_informer_sync_duration_seconds_count",
                        gvr=GVR_STRING) >= 1
    assert active.total("dynamic_controller_watch_count") >= 1
    assert active.total("dynamic_controller_instance_watch_count", parent_gvr=GVR_STRING) == 1
    # The instance watches its Deployment and Service by name.
    assert active.total("dynamic_controller_watch_request_count",
                        gvr="apps/v1, Resource=deployments", type="scalar") >= 1
    assert active.total("dynamic_controller_watch_request_count",
                        gvr="/v1, Resource=services", type="scalar") >= 1
    assert active.total("dynamic_controller_route_total",
                        gvr="apps/v1, Resource=deployments") >= 1
    assert active.total("dynamic_controller_route_match_total",
                        gvr="apps/v1, Resource=deployments") >= 1


def test_instance_metrics_label_the_instance_kind(scrapes: Scrapes) -> None:
    active = scrapes.active
    require(scrapes, "instance_reconcile_total")
    assert active.total("instance_reconcile_total", gvr=GVR_STRING) > 0
    require(scrapes, "instance_reconcile_duration_seconds")
    assert active.total("instance_reconcile_duration_seconds_count", gvr=GVR_STRING) > 0
    require(scrapes, "instance_graph_resolution_success_total")
    assert active.total("instance_graph_resolution_success_total", gvr=GVR_STRING) > 0
    require(scrapes, "instance_state_transitions_total")
    # Upstream puts the GroupVersionKind string here; kro-py's one format is the GVR string.
    assert active.total("instance_state_transitions_total", gvr=GVR_STRING,
                        to_state="ACTIVE") >= 1


def test_instance_condition_metrics_follow_the_feature_gate(scrapes: Scrapes) -> None:
    require(scrapes, "instance_condition_current_status_seconds")
    series = scrapes.active.select("instance_condition_current_status_seconds",
                                   gvr=GVR_STRING, condition_type="Ready")
    assert [(s.labels["name"], s.labels["condition_status"]) for s in series] == [
        ("reviewed-web", "True")
    ]
    assert series[0].value >= 0
    # Series go away with the instance.
    assert not scrapes.deleted.select("instance_condition_current_status_seconds",
                                      gvr=GVR_STRING)


def test_rgd_and_graph_revision_metrics(scrapes: Scrapes) -> None:
    active, deleted = scrapes.active, scrapes.deleted
    rgd = RGD_NAME
    require(scrapes, "rgd_graph_build_total")
    assert active.total("rgd_graph_build_total", name=rgd) >= 1
    require(scrapes, "rgd_graph_revision_resolution_total")
    assert active.total("rgd_graph_revision_resolution_total", result="serve") >= 1
    require(scrapes, "graph_revision_compile_total")
    assert active.total("graph_revision_compile_total", result="success") >= 1
    require(scrapes, "graph_revision_registry_entries")
    assert active.total("graph_revision_registry_entries", state="active") >= 1
    require(scrapes, "rgd_deletions_total")
    assert deleted.total("rgd_deletions_total", name=rgd) == 1
    require(scrapes, "rgd_deletion_duration_seconds")
    assert deleted.total("rgd_deletion_duration_seconds_count", name=rgd) == 1


# -- hygiene -------------------------------------------------------------------------------------


def test_no_created_series(scrapes: Scrapes) -> None:
    for scrape in (scrapes.active, scrapes.deleted):
        created = sorted({s.name for s in scrape.samples if s.name.endswith("_created")})
        assert created == []


def test_every_gvr_label_has_one_format(scrapes: Scrapes) -> None:
    seen: dict[str, set[str]] = {}
    for scrape in (scrapes.active, scrapes.deleted):
        for sample in scrape.samples:
            for label in ("gvr", "parent_gvr"):
                if label in sample.labels:
                    seen.setdefault(sample.labels[label], set()).add(sample.name)
    assert GVR_STRING in seen
    assert {value: names for value, names in seen.items() if not GVR_LABEL.match(value)} == {}


def test_error_counters_exist_at_zero_before_any_error(scrapes: Scrapes) -> None:
    active = scrapes.active
    for reason in ("resource_apply_failed", "reconcile_failed", "resolution_failed",
                   "management_failed", "deletion_blocked"):  # fmt: skip
        assert active.select("instance_errors_total", rgd=RGD_NAME, reason=reason), reason
    for reason in ("invalid_resource_graph", "crd_install_failed", "failed_to_start",
                   "missing_permissions", "reconcile_failed"):  # fmt: skip
        assert active.select("rgd_errors_total", rgd=RGD_NAME, reason=reason), reason
    assert active.total("instance_errors_total", rgd=RGD_NAME) == 0
    assert active.total("rgd_errors_total", rgd=RGD_NAME) == 0
    assert active.select("instance_reconcile_errors_total", gvr=GVR_STRING)


def test_state_gauges_match_the_cluster(scrapes: Scrapes) -> None:
    active = scrapes.active
    states = {s.labels["state"]: s.value for s in active.select("instances_by_state", rgd=RGD_NAME)}
    assert states == {"ACTIVE": 1, "IN_PROGRESS": 0, "ERROR": 0, "DELETING": 0}
    assert {s.labels["state"] for s in active.select("rgds_by_state")} >= {"Active", "Inactive"}
    assert scrapes.gauges == scrapes.cluster
    assert scrapes.gauges["instance/ACTIVE"] == 1
    assert scrapes.gauges["rgd/Active"] >= 1


def test_an_rgd_s_series_go_with_it(scrapes: Scrapes) -> None:
    deleted = scrapes.deleted
    for name in ("instances_by_state", "instance_errors_total", "rgd_errors_total"):
        assert not deleted.select(name, rgd=RGD_NAME), name
    for name in ("instance_reconcile_total", "dynamic_controller_reconcile_total",
                 "instance_state_transitions_total"):  # fmt: skip
        assert not deleted.select(name, gvr=GVR_STRING), name
