"""What an operator sees of an instance's life, on the real control plane: Events on the instance
(feature gate InstanceConditionEvents, on in the harness) and upstream's instance, RGD and
GraphRevision metrics on /metrics.
"""

from __future__ import annotations

from typing import Any

from kro_harness import (
    CONFIGMAPS,
    ControllerThread,
    KroEnv,
    kro_fixtures,
    state,
    wait_for,
)
from prometheus_client.parser import text_string_to_metric_families

from kro.runtime.gvk import GVR

EVENTS = GVR("", "v1", "events")


controller, kro = kro_fixtures()


async def _reader(kro: KroEnv) -> GVR:
    """An instance that waits for an external ConfigMap `settings`, then copies it."""
    rgd = kro.rgd(
        "reader",
        "Reader",
        {"source": "string | default=settings"},
        [
            {
                "id": "source",
                "externalRef": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.spec.source}"},
                },
            },
            {
                "id": "copy",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}-copy"},
                    "data": "${source.data}",
                },
            },
        ],
    )
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])
    await kro.apply_instance("Reader", "reader", {})
    return await kro.gvr_of("Reader")


async def _events(kro: KroEnv, name: str) -> list[dict[str, Any]]:
    page = await kro.client.list(
        EVENTS, namespace=kro.namespace, field_selector=f"involvedObject.name={name}"
    )
    return list(page.get("items") or [])


def _seen(events: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(e["type"], e["reason"], e["message"]) for e in events}


async def test_condition_changes_are_reported_as_events(kro: KroEnv) -> None:
    gvr = await _reader(kro)
    waiting = {
        ("Warning", "ResourcesReady", "none -> False: NotReady"),
        ("Warning", "Ready", "none -> False: NotReady"),
        ("Normal", "InstanceManaged", "none -> True: Managed"),
        ("Normal", "GraphResolved", "none -> True: Resolved"),
    }

    async def reported(wanted: set[tuple[str, str, str]]) -> list[dict[str, Any]] | None:
        events = await _events(kro, "reader")
        return events if wanted <= _seen(events) else None

    events = await wait_for(lambda: reported(waiting), what=f"events {waiting}")
    crd_name = f"{gvr.resource}.{gvr.group}"
    assert {e["source"]["component"] for e in events} == {f"kro/{crd_name}-controller"}
    assert {e["involvedObject"]["kind"] for e in events} == {"Reader"}

    settings = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}}
    await kro.client.create(CONFIGMAPS, {**settings, "data": {"k": "v"}}, namespace=kro.namespace)
    await kro.wait_instance(gvr, "reader")
    ready = {
        ("Normal", "ResourcesReady", "False -> True: AllResourcesReady"),
        ("Normal", "Ready", "False -> True: Ready"),
    }
    await wait_for(lambda: reported(ready), what=f"events {ready}")


def _samples(text: str, metric: str) -> list[tuple[dict[str, str], float]]:
    return [
        (dict(sample.labels), sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == metric
    ]


def _total(text: str, metric: str, **labels: str) -> float:
    return sum(
        value
        for have, value in _samples(text, metric)
        if all(have.get(k) == v for k, v in labels.items())
    )


async def test_instance_rgd_and_revision_metrics_are_recorded(
    kro: KroEnv, controller: ControllerThread
) -> None:
    gvr = await _reader(kro)
    await kro.wait_instance(gvr, "reader", lambda o: state(o) == "IN_PROGRESS")
    settings = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}}
    await kro.client.create(CONFIGMAPS, {**settings, "data": {"k": "v"}}, namespace=kro.namespace)
    await kro.wait_instance(gvr, "reader")

    gvr_label = f"{gvr.group}/{gvr.version}, Resource={gvr.resource}"
    gvk_label = gvr_label  # one label format on every family (docs/metrics.md)
    rgd_name = kro.rgd_name("reader")

    async def scraped() -> str | None:
        text = controller.scrape()
        moved = _total(text, "instance_state_transitions_total", gvr=gvk_label, to_state="ACTIVE")
        return text if moved else None

    text = await wait_for(scraped, what="the ACTIVE transition in /metrics")
    assert _total(text, "instance_state_transitions_total", gvr=gvk_label, to_state="IN_PROGRESS")
    assert _total(text, "instance_reconcile_total", gvr=gvr_label) >= 2
    assert _total(text, "instance_reconcile_duration_seconds_count", gvr=gvr_label) >= 2
    assert _total(text, "instance_graph_resolution_success_total", gvr=gvr_label) >= 2
    assert _total(text, "rgd_graph_build_total", name=rgd_name) >= 1
    assert _total(text, "rgd_graph_build_duration_seconds_count", name=rgd_name) >= 1
    assert _total(text, "rgd_graph_revision_issue_total", reason="no_revision") >= 1
    assert _total(text, "rgd_graph_revision_resolution_total", result="serve") >= 1
    assert _total(text, "graph_revision_compile_total", result="success") >= 1
    assert _total(text, "graph_revision_registry_entries", state="active") >= 1
