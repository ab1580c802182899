"""PrometheusProvider: idempotent metrics on a private registry, rendered as text exposition."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

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
