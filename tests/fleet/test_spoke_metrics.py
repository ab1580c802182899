"""What the members' spokes record (kro.fleet.spoke_metrics, M-21): into the hub's families,
under upstream's names and label sets; each spoke's queue a series of its own; gauges of one
controller's state left to the hub; the spoke's own series gone with its member."""

from __future__ import annotations

from collections import Counter

from prometheus_client.parser import text_string_to_metric_families

from kro.controllers.metrics import InstanceMetrics, RuntimeMetrics
from kro.dynamic import DynamicController
from kro.fleet.spoke_metrics import SpokeMetrics
from kro.runtime.cache import InformerCache
from kro.runtime.prometheus import PrometheusProvider
from kro.runtime.workqueue import WorkQueue

GVR = "example.com/v1, Resource=apps"
QUEUE = "dynamic-controller-queue"


def _value(hub: PrometheusProvider, metric: str, **labels: str) -> float | None:
    return hub.registry.get_sample_value(metric, labels)


def _exposition_is_valid(hub: PrometheusProvider) -> None:
    """One family per name, one sample per label set: what Prometheus accepts."""
    families = list(text_string_to_metric_families(hub.render().decode()))
    names = Counter(family.name for family in families)
    assert [name for name, seen in names.items() if seen > 1] == []
    for family in families:
        keys = Counter((s.name, tuple(sorted(s.labels.items()))) for s in family.samples)
        assert [key for key, seen in keys.items() if seen > 1] == [], family.name


def test_a_spokes_queue_is_its_own_series_beside_the_hubs() -> None:
    hub = PrometheusProvider(process_metrics=False)
    spokes = SpokeMetrics(hub)
    ours: WorkQueue[str] = WorkQueue(QUEUE, metrics=hub)
    theirs: WorkQueue[str] = WorkQueue(QUEUE, metrics=spokes.provider("member-1"))
    ours.add("a")
    theirs.add("b")
    theirs.add("c")
    assert _value(hub, "workqueue_depth", name=QUEUE) == 1.0
    assert _value(hub, "workqueue_depth", name=f"{QUEUE}/member-1") == 2.0
    assert _value(hub, "workqueue_adds_total", name=f"{QUEUE}/member-1") == 2.0
    _exposition_is_valid(hub)
    spokes.forget("member-1")
    assert _value(hub, "workqueue_depth", name=f"{QUEUE}/member-1") is None
    assert _value(hub, "workqueue_depth", name=QUEUE) == 1.0
    theirs.add("d")  # a spoke still draining after its member left records nothing
    assert _value(hub, "workqueue_adds_total", name=f"{QUEUE}/member-1") is None


def test_counters_aggregate_over_the_fleet_and_stay_when_a_spoke_forgets() -> None:
    hub = PrometheusProvider(process_metrics=False)
    spokes = SpokeMetrics(hub)
    ours, theirs = InstanceMetrics(hub), InstanceMetrics(spokes.provider("member-1"))
    ours.reconcile_total.inc(gvr=GVR)
    theirs.reconcile_total.inc(gvr=GVR)
    theirs.reconcile_duration.observe(0.2, gvr=GVR)
    RuntimeMetrics(spokes.provider("member-2")).node_eval_total.inc(3)
    assert _value(hub, "instance_reconcile_total", gvr=GVR) == 2.0
    assert _value(hub, "instance_reconcile_duration_seconds_count", gvr=GVR) == 1.0
    assert _value(hub, "runtime_node_eval_total") == 3.0
    theirs.forget(GVR, "apps")  # the spoke stops serving the kind: the fleet's series stay
    assert _value(hub, "instance_reconcile_total", gvr=GVR) == 2.0
    ours.forget(GVR, "apps")  # the hub does: they go
    assert _value(hub, "instance_reconcile_total", gvr=GVR) is None


def test_instance_states_are_summed_and_leave_with_the_member() -> None:
    hub = PrometheusProvider(process_metrics=False)
    spokes = SpokeMetrics(hub)
    ours = InstanceMetrics(hub)
    first = InstanceMetrics(spokes.provider("member-1"))
    other = InstanceMetrics(spokes.provider("member-2"))
    ours.states.set(("ns", "a"), "ACTIVE", "apps")
    first.states.set(("ns", "a"), "ACTIVE", "apps")  # the same name in a member: another one
    other.states.set(("ns", "a"), "ERROR", "apps")
    assert _value(hub, "instances_by_state", rgd="apps", state="ACTIVE") == 2.0
    assert _value(hub, "instances_by_state", rgd="apps", state="ERROR") == 1.0
    _exposition_is_valid(hub)
    again = InstanceMetrics(spokes.provider("member-1"))  # a rotation: a new spoke
    assert _value(hub, "instances_by_state", rgd="apps", state="ACTIVE") == 1.0
    again.states.set(("ns", "a"), "ACTIVE", "apps")
    assert _value(hub, "instances_by_state", rgd="apps", state="ACTIVE") == 2.0
    spokes.forget("member-2")
    assert _value(hub, "instances_by_state", rgd="apps", state="ERROR") == 0.0


async def test_a_spokes_dynamic_controller_leaves_the_hubs_gauges_alone() -> None:
    """Built over the same provider as the hub's: no family registered twice, and the hub's
    queue length and watch count are the hub's."""
    hub = PrometheusProvider(process_metrics=False)
    spokes = SpokeMetrics(hub)
    ours = DynamicController(InformerCache(None), metrics=hub)
    theirs = DynamicController(InformerCache(None), metrics=spokes.provider("member-1"))
    ours._metrics.queue_length.set(4)
    theirs._metrics.queue_length.set(0)
    theirs._metrics.watch_count.set(9)
    assert _value(hub, "dynamic_controller_queue_length") == 4.0
    assert _value(hub, "dynamic_controller_watch_count") in (None, 0.0)
    _exposition_is_valid(hub)
    ours.shutdown()
    theirs.shutdown()
