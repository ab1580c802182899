"""PrometheusProvider: idempotent metrics on a private registry, rendered as text exposition, whose
series can be removed (`remove(**labels)`, for things that come and go like RGDs)."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from kro.runtime.metrics import NOOP
from kro.runtime.prometheus import CONTENT_TYPE, PrometheusProvider


def provider() -> PrometheusProvider:
    return PrometheusProvider(CollectorRegistry())


def test_counter_with_labels_is_rendered() -> None:
    p = provider()
    p.counter("workqueue_adds_total", "adds", ("name",)).inc(name="q")
    p.counter("workqueue_adds_total", "adds", ("name",)).inc(2, name="q")
    assert 'workqueue_adds_total{name="q"} 3.0' in p.render().decode()


def test_asking_twice_returns_the_same_metric() -> None:
    p = provider()
    assert p.gauge("workqueue_depth", "depth", ("name",)) is p.gauge(
        "workqueue_depth", "depth", ("name",)
    )


def test_same_name_with_another_type_is_refused() -> None:
    p = provider()
    p.gauge("thing", "a gauge")
    with pytest.raises(ValueError, match="exists as a gauge"):
        p.counter("thing", "a counter")


def test_same_name_with_other_labels_is_refused() -> None:
    p = provider()
    p.gauge("thing", "a gauge", ("a",))
    with pytest.raises(ValueError, match="labels"):
        p.gauge("thing", "a gauge", ("b",))


def test_gauge_moves_both_ways() -> None:
    p = provider()
    g = p.gauge("controller_runtime_active_workers", "active", ("controller",))
    g.set(5, controller="c")
    g.inc(controller="c")
    g.dec(3, controller="c")
    assert 'controller_runtime_active_workers{controller="c"} 3.0' in p.render().decode()


def test_histogram_uses_the_given_buckets() -> None:
    p = provider()
    h = p.histogram("reconcile_seconds", "time", ("controller",), buckets=(0.1, 1.0))
    h.observe(0.5, controller="c")
    text = p.render().decode()
    assert 'reconcile_seconds_bucket{controller="c",le="0.1"} 0.0' in text
    assert 'reconcile_seconds_bucket{controller="c",le="1.0"} 1.0' in text


def test_histogram_without_buckets_gets_the_defaults() -> None:
    p = provider()
    p.histogram("plain_seconds", "time").observe(0.2)
    assert 'plain_seconds_bucket{le="0.25"} 1.0' in p.render().decode()


def test_unlabelled_metric_takes_no_labels() -> None:
    p = provider()
    p.counter("cel_expr_eval_total", "evals").inc()
    assert "cel_expr_eval_total 1.0" in p.render().decode()


def test_default_registry_is_private_and_has_process_metrics() -> None:
    a, b = PrometheusProvider(), PrometheusProvider()
    a.counter("only_in_a_total", "x").inc()
    assert b"only_in_a_total" not in b.render()
    assert b"python_info" in a.render()


def test_content_type_is_prometheus_text() -> None:
    assert CONTENT_TYPE.startswith("text/plain")


# -- removing series ----------------------------------------------------------------------------


def _value(p: PrometheusProvider, metric: str, /, **labels: str) -> float | None:
    return p.registry.get_sample_value(metric, labels)


def test_remove_with_every_label_drops_exactly_that_series() -> None:
    p = provider()
    c = p.counter("requests_total", "requests", ("gvr", "code"))
    c.inc(gvr="a", code="200")
    c.inc(gvr="a", code="500")
    c.remove(gvr="a", code="200")
    assert _value(p, "requests_total", gvr="a", code="200") is None
    assert _value(p, "requests_total", gvr="a", code="500") == 1


def test_remove_with_some_labels_drops_every_series_they_match() -> None:
    p = provider()
    c = p.counter("requests_total", "requests", ("gvr", "code"))
    for gvr, code in (("a", "200"), ("a", "500"), ("b", "200")):
        c.inc(gvr=gvr, code=code)
    c.remove(gvr="a")
    assert 'gvr="a"' not in p.render().decode()
    assert _value(p, "requests_total", gvr="b", code="200") == 1


def test_removing_a_series_that_is_not_there_does_nothing() -> None:
    p = provider()
    g = p.gauge("depth", "depth", ("name",))
    g.set(2, name="q")
    g.remove(name="never-recorded")
    g.remove(name="q")
    g.remove(name="q")
    assert _value(p, "depth", name="q") is None


def test_a_removed_series_starts_again_from_zero_when_recorded() -> None:
    """The adapter caches children per label set: a stale cached child would swallow every
    later recording without ever showing on /metrics again."""
    p = provider()
    c = p.counter("builds_total", "builds", ("name",))
    c.inc(5, name="rgd")
    c.remove(name="rgd")
    c.inc(name="rgd")
    assert _value(p, "builds_total", name="rgd") == 1
    # Labels given in another order name the same series, cached or not.
    t = p.counter("transitions_total", "transitions", ("from", "to"))
    t.inc(1, **{"from": "a", "to": "b"})
    t.remove(to="b")
    t.inc(1, **{"to": "b", "from": "a"})
    t.inc(1, **{"from": "a", "to": "b"})
    assert _value(p, "transitions_total", **{"from": "a", "to": "b"}) == 2


def test_removal_through_one_handle_is_seen_by_every_handle() -> None:
    p = provider()
    first = p.counter("builds_total", "builds", ("name",))
    second = p.counter("builds_total", "builds", ("name",))
    first.inc(name="rgd")
    second.remove(name="rgd")
    first.inc(name="rgd")
    assert _value(p, "builds_total", name="rgd") == 1


def test_remove_drops_a_histogram_s_buckets_sum_and_count() -> None:
    p = provider()
    h = p.histogram("reconcile_seconds", "time", ("gvr",), buckets=(0.1, 1.0))
    h.observe(0.5, gvr="a")
    h.observe(0.5, gvr="b")
    h.remove(gvr="a")
    text = p.render().decode()
    assert 'gvr="a"' not in text
    assert _value(p, "reconcile_seconds_count", gvr="b") == 1


@pytest.mark.parametrize(
    ("labels", "error"),
    [({}, "needs the labels"), ({"kind": "x"}, "unknown labels")],
    ids=["nothing", "a-typo"],
)
def test_remove_refuses_what_cannot_be_meant(labels: dict[str, str], error: str) -> None:
    p = provider()
    c = p.counter("builds_total", "builds", ("name",))
    c.inc(name="rgd")
    with pytest.raises(ValueError, match=error):
        c.remove(**labels)
    assert _value(p, "builds_total", name="rgd") == 1


def test_an_unlabelled_metric_has_nothing_to_remove() -> None:
    p = provider()
    c = p.counter("cel_expr_eval_total", "evals")
    with pytest.raises(ValueError, match="unknown labels"):
        c.remove(name="x")


def test_the_noop_provider_accepts_removals() -> None:
    for metric in (
        NOOP.counter("c_total", "c", ("name",)),
        NOOP.gauge("g", "g", ("name",)),
        NOOP.histogram("h", "h", ("name",)),
    ):
        metric.remove(name="x")
