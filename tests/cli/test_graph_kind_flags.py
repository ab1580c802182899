"""The GraphKind gate's flags (V-40, V-80, V-81) and what the gate switches on (V-85).

With the gate on, kro needs its own ServiceAccount named (it must refuse Graphs that would
impersonate it); a missing flag is a one-line usage error naming that flag. With the gate off,
kro builds nothing that would list or watch Graphs and registers no graphengine_* series.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kro.cli.controller import GRAPHS, app_options
from kro.cli.flags import parse_controller_args
from kro.controllers.app import KroApp
from kro.runtime.client import Client, ClientOptions
from kro.runtime.config import ConnectionConfig
from kro.runtime.manager import Manager, ManagerOptions
from kro.runtime.prometheus import PrometheusProvider

ON = "--feature-gates=GraphKind=true"
IDENTITY = ["--controller-namespace=kro-system", "--controller-service-account=kro"]


def test_graph_kind_is_a_known_gate_off_by_default() -> None:
    assert parse_controller_args([]).feature_gates["GraphKind"] is False
    assert parse_controller_args([ON, *IDENTITY]).feature_gates["GraphKind"] is True


def test_graph_flags_reach_the_app_options() -> None:
    config = parse_controller_args([ON, *IDENTITY, "--graph-concurrent-reconciles=4"])
    options = app_options(config)
    assert options.graph_kind is True
    assert (options.controller_namespace, options.controller_service_account) == (
        "kro-system", "kro")
    assert options.graph_concurrent_reconciles == 4
    off = app_options(parse_controller_args([]))
    assert (off.graph_kind, off.graph_concurrent_reconciles) == (False, 1)


def test_identity_flags_are_optional_without_the_gate() -> None:
    config = parse_controller_args(["--feature-gates=GraphKind=false"])
    assert (config.controller_namespace, config.controller_service_account) == ("", "")


@pytest.mark.parametrize(
    ("argv", "named", "not_named"),
    [
        ([ON], ["--controller-namespace", "--controller-service-account"], []),
        ([ON, "--controller-service-account=kro"], ["--controller-namespace"],
         ["--controller-service-account"]),
        ([ON, "--controller-namespace=kro-system"], ["--controller-service-account"],
         ["--controller-namespace"]),
        ([ON, "--controller-namespace=", "--controller-service-account=kro"],
         ["--controller-namespace"], ["--controller-service-account"]),
    ],
    ids=["both", "namespace", "service-account", "empty-namespace"],
)
def test_gate_on_without_kros_identity_exits_2_naming_the_missing_flag(
    argv: list[str], named: list[str], not_named: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """(That it is one line with exit status 2 is tests/cli/test_flags.py's, for every flag.)"""
    with pytest.raises(SystemExit):
        parse_controller_args(argv)
    err = capsys.readouterr().err
    assert "required when the GraphKind feature gate is on" in err
    for flag in named:
        assert flag in err
    for flag in not_named:
        assert flag not in err


@pytest.mark.parametrize("value", ["0", "-1", "x"], ids=str)
def test_graph_workers_must_be_a_positive_integer(value: str) -> None:
    with pytest.raises(SystemExit):
        parse_controller_args([f"--graph-concurrent-reconciles={value}"])


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    provider = PrometheusProvider()
    # Nothing is sent: building the app only creates informers and registers metrics.
    built = Client.from_config(
        ConnectionConfig(server="http://127.0.0.1:9"), ClientOptions(metrics=provider)
    )
    yield built
    await built.close()


def _build(client: Client, argv: list[str]) -> tuple[KroApp, PrometheusProvider]:
    provider = PrometheusProvider()
    manager = Manager(ManagerOptions(), client=client, metrics=provider)
    return KroApp(manager, app_options(parse_controller_args(argv)), metrics=provider), provider


def _samples(provider: PrometheusProvider) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """{family type + name: {labels: value}} of one scrape."""
    text = provider.render()
    body = text.decode() if isinstance(text, bytes) else text
    found: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(body):
        found.setdefault(f"{family.type} {family.name}", {})
        for sample in family.samples:
            if sample.name.endswith("_created"):
                continue
            key = tuple(sorted(sample.labels.items()))
            found[f"{family.type} {family.name}"][key] = sample.value
    return found


async def test_gate_off_builds_nothing_for_graphs(client: Client) -> None:
    app, provider = _build(client, [])
    assert app.graph_metrics is None
    assert not [name for name in _samples(provider) if "graphengine" in name]
    assert GRAPHS not in {informer.gvr for informer in app.cache.informers()}
    assert GRAPHS.api_version == "kro.run/v1alpha1"
    assert GRAPHS.resource == "graphs"


async def test_gate_on_registers_the_graphengine_metrics(client: Client) -> None:
    app, provider = _build(client, [ON, *IDENTITY])
    metrics = app.graph_metrics
    assert metrics is not None
    configmaps = "/v1, Resource=configmaps"
    metrics.watch_owners.set(3)
    metrics.watch_requests.set(2, gvr=configmaps, kind="collection")
    metrics.routed.inc(gvr=configmaps)
    metrics.routed.inc(gvr=configmaps)
    metrics.matched.inc(gvr=configmaps)
    samples = _samples(provider)
    assert samples["gauge graphengine_watch_owner_count"] == {(): 3.0}
    assert samples["gauge graphengine_watch_request_count"] == {
        (("gvr", configmaps), ("kind", "collection")): 2.0}
    assert samples["counter graphengine_route"] == {(("gvr", configmaps),): 2.0}
    assert samples["counter graphengine_route_match"] == {(("gvr", configmaps),): 1.0}
