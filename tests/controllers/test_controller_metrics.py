"""Upstream kro's controller metrics (reference §1.R rows 30-36, 38-57), read back from the
provider's registry exactly as /metrics shows them: names, label names and label values."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from controllers_fakes import (
    GREETERS,
    GVR_LABEL,
    NS,
    RESOLVER,
    DictClient,
    RecordingWatches,
    greeter,
    greeter_graph,
    greeter_reconciler,
    greeter_rgd,
    sample,
)
from fakes_control import RecordingMetrics

from kro.applyset import Applier
from kro.controllers.graphrevision import GRAPH_REVISIONS, GraphRevisionReconciler
from kro.controllers.instance import InstanceReconciler
from kro.controllers.instance.reconciler import ReconcileFailed
from kro.controllers.metrics import (
    GraphRevisionMetrics,
    InstanceMetrics,
    RegistryMetrics,
    RGDMetrics,
    RuntimeMetrics,
)
from kro.controllers.registry import RevisionRegistry
from kro.controllers.rgd import RGDS, RGDReconciler
from kro.graph.builder import BuildOptions, build_graph
from kro.runtime.client import Client
from kro.runtime.errors import ApiError
from kro.runtime.prometheus import PrometheusProvider
from kro.runtime.reconcile import Request
from kro.testing.fakeapi import FakeApiServer

HI = Request(NS, "hi")


def _instances(
    client: Client, applier: Applier, provider: PrometheusProvider, registry: RevisionRegistry
) -> InstanceReconciler:
    return greeter_reconciler(
        runtime_metrics=RuntimeMetrics(provider),
        client=client,
        registry=registry,
        applier=applier,
        watches=RecordingWatches(),
        metrics=InstanceMetrics(provider),
    )


# -- instances -----------------------------------------------------------------------------------


async def test_instance_reconciles_are_counted_and_timed(
    api: FakeApiServer, client: Client, applier: Applier, provider: PrometheusProvider
) -> None:
    registry = RevisionRegistry()
    registry.activate("greeter", 1, "h1", greeter_graph())
    api.seed(GREETERS, greeter())
    reconciler = _instances(client, applier, provider, registry)
    for _ in range(3):
        await reconciler.reconcile(HI)

    live = await client.get(GREETERS, "hi", namespace=NS)
    assert live["status"]["state"] == "ACTIVE"
    assert sample(provider, "instance_reconcile_total", gvr=GVR_LABEL) == 3
    assert sample(provider, "instance_reconcile_duration_seconds_count", gvr=GVR_LABEL) == 3
    assert sample(provider, "instance_graph_resolution_success_total", gvr=GVR_LABEL) == 3
    assert sample(provider, "instance_reconcile_errors_total", gvr=GVR_LABEL) == 0


async def test_graph_evaluation_is_counted(
    api: FakeApiServer, client: Client, applier: Applier, provider: PrometheusProvider
) -> None:
    rgd = greeter_rgd()
    rgd["spec"]["schema"]["spec"]["names"] = "[]string"
    rgd["spec"]["resources"].append(
        {
            "id": "extras",
            "forEach": [{"n": "${schema.spec.names}"}],
            "includeWhen": ["${size(schema.spec.names) > 0}"],
            "template": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "${schema.metadata.name}-${n}"},
            },
        }
    )
    registry = RevisionRegistry()
    registry.activate("greeter", 1, "h1", build_graph(rgd, RESOLVER))
    api.seed(GREETERS, greeter(spec={"name": "x", "names": ["a", "b", "c"]}))
    await _instances(client, applier, provider, registry).reconcile(HI)

    assert sample(provider, "runtime_creation_total") == 1
    assert sample(provider, "runtime_creation_duration_seconds_count") == 1
    assert sample(provider, "runtime_node_ignored_check_total") == 2  # one per node
    assert sample(provider, "runtime_node_ignored_total") == 0
    assert sample(provider, "runtime_node_eval_total") == 2
    assert sample(provider, "runtime_node_eval_duration_seconds_count") == 2
    assert sample(provider, "runtime_collection_size_count") == 1
    assert sample(provider, "runtime_collection_size_sum") == 3
    assert sample(provider, "runtime_collection_size_bucket", le="4.0") == 1
    assert sample(provider, "runtime_collection_size_bucket", le="2.0") == 0
    assert sample(provider, "runtime_node_ready_check_total") >= 2


async def test_state_transitions_carry_the_instance_gvr(
    api: FakeApiServer, client: Client, applier: Applier, provider: PrometheusProvider
) -> None:
    registry = RevisionRegistry()
    api.seed(GREETERS, greeter())
    reconciler = _instances(client, applier, provider, registry)
    await reconciler.reconcile(HI)  # no revision yet: ERROR
    registry.activate("greeter", 1, "h1", greeter_graph())
    await reconciler.reconcile(HI)  # ACTIVE
    await reconciler.reconcile(HI)  # still ACTIVE: not a transition

    def moved(from_state: str, to_state: str) -> float:
        return sample(
            provider,
            "instance_state_transitions_total",
            gvr=GVR_LABEL,  # one format on every family (upstream: the GVK string here)
            from_state=from_state,
            to_state=to_state,
        )

    assert moved("", "ERROR") == 1
    assert moved("ERROR", "ACTIVE") == 1
    assert moved("ACTIVE", "ACTIVE") == 0


@pytest.mark.parametrize(
    ("prepare", "counter", "labels"),
    [
        (lambda r: None, "instance_graph_resolution_failures_total", {"reason": "not_available"}),
        (
            lambda r: r.put_pending("greeter", 1, "h1"),
            "instance_graph_resolution_pending_total",
            {},
        ),
        (
            lambda r: r.fail("greeter", 1, "h1", "bad"),
            "instance_graph_resolution_failures_total",
            {"reason": "failed"},
        ),
    ],
    ids=["no-revision", "pending", "failed"],
)
async def test_graph_resolution_outcomes_are_counted(  # noqa: PLR0917 (fixtures + params)
    api: FakeApiServer,
    client: Client,
    applier: Applier,
    provider: PrometheusProvider,
    prepare: Any,
    counter: str,
    labels: dict[str, str],
) -> None:
    registry = RevisionRegistry()
    prepare(registry)
    api.seed(GREETERS, greeter())
    await _instances(client, applier, provider, registry).reconcile(HI)
    assert sample(provider, counter, gvr=GVR_LABEL, **labels) == 1
    assert sample(provider, "instance_graph_resolution_success_total", gvr=GVR_LABEL) == 0
    live = await client.get(GREETERS, "hi", namespace=NS)
    assert live["status"]["state"] == "ERROR"


async def test_failed_reconciles_are_counted_as_errors(
    api: FakeApiServer, client: Client, applier: Applier, provider: PrometheusProvider
) -> None:
    registry = RevisionRegistry()
    registry.activate("greeter", 1, "h1", greeter_graph(text="${string(int(schema.spec.name))}"))
    api.seed(GREETERS, greeter())
    with pytest.raises(ReconcileFailed):
        await _instances(client, applier, provider, registry).reconcile(HI)
    assert sample(provider, "instance_reconcile_errors_total", gvr=GVR_LABEL) == 1
    assert sample(provider, "instance_reconcile_total", gvr=GVR_LABEL) == 1


# -- the revision registry ----------------------------------------------------------------------


def test_registry_metrics_follow_its_entries(provider: PrometheusProvider) -> None:
    registry = RevisionRegistry(RegistryMetrics(provider))

    def entries(state: str) -> float:
        return sample(provider, "graph_revision_registry_entries", state=state)

    def transitions(from_state: str, to_state: str) -> float:
        labels = {"from": from_state, "to": to_state}
        return sample(provider, "graph_revision_registry_transitions_total", **labels)

    assert (entries("pending"), entries("active"), entries("failed")) == (0, 0, 0)
    registry.put_pending("a", 1, "h1")
    assert entries("pending") == 1
    registry.activate("a", 1, "h1", greeter_graph())
    assert (entries("pending"), entries("active")) == (0, 1)
    assert transitions("pending", "active") == 1
    registry.put_pending("a", 2, "h2")
    registry.fail("a", 2, "h2", "broken")
    assert transitions("pending", "failed") == 1
    registry.evict("a", 1)
    assert entries("active") == 0
    assert sample(provider, "graph_revision_registry_evictions_total") == 1
    registry.drop("a")
    assert entries("failed") == 0
    assert sample(provider, "graph_revision_registry_evictions_total") == 2


# -- GraphRevisions -----------------------------------------------------------------------------


def _revision(number: int, rgd: dict[str, Any]) -> dict[str, Any]:
    name = rgd["metadata"]["name"]
    return {
        "apiVersion": "internal.kro.run/v1alpha1",
        "kind": "GraphRevision",
        "metadata": {
            "name": f"{name}-r{number:05d}",
            "labels": {"kro.run/graph-revision-hash": f"h{number}"},
        },
        "spec": {
            "revision": number,
            "snapshot": {"name": name, "generation": 1, "spec": rgd["spec"]},
        },
    }


def _compiler(
    client: DictClient, registry: RevisionRegistry, provider: PrometheusProvider
) -> GraphRevisionReconciler:
    return GraphRevisionReconciler(
        client=client,  # type: ignore[arg-type]
        registry=registry,
        resolver=RESOLVER,
        options=BuildOptions(),
        notify_rgd=lambda name: None,
        metrics=GraphRevisionMetrics(provider),
    )


async def test_graph_revision_compiles_are_counted_by_result(provider: PrometheusProvider) -> None:
    client = DictClient()
    registry = RevisionRegistry(RegistryMetrics(provider))
    broken = greeter_rgd(text="${schema.spec.nope}")
    client.seed(GRAPH_REVISIONS, _revision(1, greeter_rgd()))
    client.seed(GRAPH_REVISIONS, _revision(2, broken))
    compiler = _compiler(client, registry, provider)
    await compiler.reconcile(Request("", "greeter-r00001"))
    await compiler.reconcile(Request("", "greeter-r00002"))

    for result in ("success", "failed"):
        assert sample(provider, "graph_revision_compile_total", result=result) == 1
        count = "graph_revision_compile_duration_seconds_count"
        assert sample(provider, count, result=result) == 1
    assert sample(provider, "graph_revision_registry_entries", state="active") == 1
    assert sample(provider, "graph_revision_registry_entries", state="failed") == 1


async def test_a_failed_status_write_defers_activation(provider: PrometheusProvider) -> None:
    client = DictClient()
    registry = RevisionRegistry(RegistryMetrics(provider))
    client.seed(GRAPH_REVISIONS, _revision(1, greeter_rgd()))

    async def refuse(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise ApiError(status=500, reason="InternalError", message="etcd is sad")

    client.update_status = refuse  # type: ignore[method-assign]
    with pytest.raises(ApiError):
        await _compiler(client, registry, provider).reconcile(Request("", "greeter-r00001"))
    assert sample(provider, "graph_revision_status_update_errors_total") == 1
    assert sample(provider, "graph_revision_activation_deferred_total") == 1
    entry = registry.get("greeter", 1)
    assert entry is not None
    assert entry.state.value == "pending"


async def test_deleting_a_revision_evicts_it(provider: PrometheusProvider) -> None:
    client = DictClient()
    registry = RevisionRegistry(RegistryMetrics(provider))
    client.seed(GRAPH_REVISIONS, _revision(1, greeter_rgd()))
    compiler = _compiler(client, registry, provider)
    await compiler.reconcile(Request("", "greeter-r00001"))
    stored = client.objects[(GRAPH_REVISIONS, "greeter-r00001")]
    stored["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    await compiler.reconcile(Request("", "greeter-r00001"))
    assert registry.get("greeter", 1) is None
    assert sample(provider, "graph_revision_finalizer_evictions_total") == 1
    assert sample(provider, "graph_revision_registry_evictions_total") == 1


# -- ResourceGraphDefinitions -------------------------------------------------------------------


def _rgds(
    client: DictClient, registry: RevisionRegistry, provider: PrometheusProvider
) -> RGDReconciler:
    return RGDReconciler(
        client=client,  # type: ignore[arg-type]
        registry=registry,
        resolver=RESOLVER,
        dynamic=None,  # type: ignore[arg-type]  # never reached: these tests stop before serving
        applier=None,  # type: ignore[arg-type]
        metrics=RGDMetrics(provider),
    )


GREETER_RGD = Request("", "greeter")


async def test_issuing_and_waiting_for_a_revision_is_counted(provider: PrometheusProvider) -> None:
    client = DictClient()
    registry = RevisionRegistry()
    client.seed(RGDS, greeter_rgd())
    rgds = _rgds(client, registry, provider)
    await rgds.reconcile(GREETER_RGD)  # builds, issues r1
    assert (GRAPH_REVISIONS, "greeter-r00001") in client.objects
    await rgds.reconcile(GREETER_RGD)  # r1 not compiled anywhere yet: warming up
    registry.put_pending("greeter", 1, "h")
    await rgds.reconcile(GREETER_RGD)  # compiling
    registry.fail("greeter", 1, "h", "broken")
    await rgds.reconcile(GREETER_RGD)  # failed

    assert sample(provider, "rgd_graph_build_total", name="greeter") == 1
    assert sample(provider, "rgd_graph_build_duration_seconds_count", name="greeter") == 1
    assert sample(provider, "rgd_graph_revision_issue_total", reason="no_revision") == 1
    assert (
        sample(provider, "rgd_graph_revision_registry_miss_total", reason="latest_not_warmed") == 1
    )
    for reason in ("warming_up", "compiling"):
        assert sample(provider, "rgd_graph_revision_wait_total", reason=reason) == 1
    for result, count in (("issue", 1), ("wait", 2), ("failed", 1), ("serve", 0)):
        assert sample(provider, "rgd_graph_revision_resolution_total", result=result) == count


async def test_an_invalid_update_counts_a_build_error_and_a_state_transition(
    provider: PrometheusProvider,
) -> None:
    client = DictClient()
    rgd = greeter_rgd(text="${schema.spec.nope}")
    rgd["metadata"]["generation"] = 2
    rgd["status"] = {
        "state": "Active",
        "conditions": [
            {"type": t, "status": "True", "reason": "r", "observedGeneration": 1}
            for t in ("GraphAccepted", "KindReady", "ControllerReady", "GraphRevisionsResolved")
        ],
    }
    client.seed(RGDS, rgd)
    await _rgds(client, RevisionRegistry(), provider).reconcile(GREETER_RGD)

    live = await client.get(RGDS, "greeter")
    assert live["status"]["state"] == "Inactive"
    assert sample(provider, "rgd_graph_build_errors_total", name="greeter") == 1
    labels = {"name": "greeter", "from": "Active", "to": "Inactive"}
    assert sample(provider, "rgd_state_transitions_total", **labels) == 1
    assert sample(provider, "rgd_graph_revision_issue_total", reason="no_revision") == 0


async def test_rgd_deletion_is_counted_and_timed(provider: PrometheusProvider) -> None:
    client = DictClient()
    rgd = copy.deepcopy(greeter_rgd())
    rgd["metadata"]["finalizers"] = ["kro.run/finalizer"]
    rgd["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    client.seed(RGDS, rgd)
    await _rgds(client, RevisionRegistry(), provider).reconcile(GREETER_RGD)
    assert client.objects[(RGDS, "greeter")]["metadata"]["finalizers"] in (None, [])
    assert sample(provider, "rgd_deletions_total", name="greeter") == 1
    assert sample(provider, "rgd_deletion_duration_seconds_count", name="greeter") == 1


# -- series of deleted RGDs and kinds ------------------------------------------------------------


def test_an_rgd_s_series_go_with_it_and_come_back_for_a_new_one(
    provider: PrometheusProvider,
) -> None:
    metrics = RGDMetrics(provider)
    metrics.build_total.inc(name="a")
    metrics.build_total.inc(name="b")
    metrics.state_transitions.inc(name="a", **{"from": "Active", "to": "Inactive"})
    metrics.deletions.inc(name="a")

    metrics.forget("a")
    assert provider.registry.get_sample_value("rgd_graph_build_total", {"name": "a"}) is None
    labels = {"name": "a", "from": "Active", "to": "Inactive"}
    assert provider.registry.get_sample_value("rgd_state_transitions_total", labels) is None
    assert sample(provider, "rgd_graph_build_total", name="b") == 1
    assert sample(provider, "rgd_deletions_total", name="a") == 1  # the deletion's record

    metrics.build_total.inc(name="a")  # an RGD of the same name, created again
    assert sample(provider, "rgd_graph_build_total", name="a") == 1


def test_a_kind_s_instance_series_go_with_it(provider: PrometheusProvider) -> None:
    metrics = InstanceMetrics(provider)
    other = "other.kro.run/v1alpha1, Resource=others"
    for gvr in (GVR_LABEL, other):
        metrics.reconcile_total.inc(gvr=gvr)
        metrics.reconcile_duration.observe(0.1, gvr=gvr)
        metrics.resolution_failures.inc(gvr=gvr, reason="failed")
    metrics.state_transitions.inc(gvr=GVR_LABEL, from_state="", to_state="ACTIVE")
    metrics.errors.inc(rgd="greeter", reason="resource_apply_failed")
    metrics.states.set(("ns", "hi"), "ACTIVE", "greeter")

    metrics.forget(GVR_LABEL, "greeter")
    for name, labels in (
        ("instance_reconcile_total", {"gvr": GVR_LABEL}),
        ("instance_reconcile_duration_seconds_count", {"gvr": GVR_LABEL}),
        ("instance_graph_resolution_failures_total", {"gvr": GVR_LABEL, "reason": "failed"}),
        (
            "instance_state_transitions_total",
            {"gvr": GVR_LABEL, "from_state": "", "to_state": "ACTIVE"},
        ),
        ("instance_errors_total", {"rgd": "greeter", "reason": "resource_apply_failed"}),
        ("instances_by_state", {"rgd": "greeter", "state": "ACTIVE"}),
    ):
        assert provider.registry.get_sample_value(name, labels) is None, name
    assert sample(provider, "instance_reconcile_total", gvr=other) == 1
    assert sample(provider, "instance_reconcile_duration_seconds_count", gvr=other) == 1


def test_forgetting_what_was_never_recorded_is_harmless(provider: PrometheusProvider) -> None:
    RGDMetrics(provider).forget("never-seen")
    InstanceMetrics(provider).forget(GVR_LABEL, "greeter")
    RGDMetrics().forget("a")  # the no-op provider
    InstanceMetrics().forget(GVR_LABEL, "greeter")


def test_forgetting_goes_through_the_provider_api() -> None:
    """Any MetricsProvider's `remove` will do, not only kro.runtime.prometheus's."""
    recorded = RecordingMetrics()
    rgds, instances = RGDMetrics(recorded), InstanceMetrics(recorded)
    rgds.build_total.inc(name="a")
    rgds.build_duration.observe(0.1, name="a")
    rgds.state_transitions.inc(1, name="a", **{"from": "Active", "to": "Inactive"})
    rgds.build_total.inc(name="b")
    instances.resolution_failures.inc(gvr=GVR_LABEL, reason="failed")
    instances.state_transitions.inc(gvr=GVR_LABEL, from_state="", to_state="ACTIVE")

    rgds.forget("a")
    instances.forget(GVR_LABEL, "greeter")
    assert list(recorded.values) == [("rgd_graph_build_total", frozenset({("name", "b")}))]
    assert recorded.observations == {}


def test_two_metric_sets_on_one_provider_agree_on_forgotten_series(
    provider: PrometheusProvider,
) -> None:
    first, second = RGDMetrics(provider), RGDMetrics(provider)
    first.build_total.inc(name="a")
    second.build_total.inc(name="a")
    first.forget("a")
    second.build_total.inc(name="a")  # not lost on a child the first one removed
    assert sample(provider, "rgd_graph_build_total", name="a") == 1
