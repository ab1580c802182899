"""What a settled pass leaves in memory, and that it still tells a change from none: a read of
one object by name keeps its version string only (no per-object mapping), a selector's read
keeps its mapping, and any change of a version, an object appearing or disappearing, or a cache
that cannot tell, means "changed"."""

from __future__ import annotations

from typing import cast

from controllers_fakes import CONFIGMAPS, GREETERS, NS, greeter_graph

from kro.controllers.settled import SETTLED, SettledPasses
from kro.dynamic import LabelSelector, ScalarWatch, SelectorWatch, WatchCoordinator
from kro.dynamic.watches import Versions, WatchRequest
from kro.engine.graph_pass import node_gvr

KEY = (NS, "hello")
PARENT = ScalarWatch("", GREETERS, NS, "hello")
CHILD = ScalarWatch("cm", CONFIGMAPS, NS, "hello-cm")
MISSING = ScalarWatch("ext", CONFIGMAPS, NS, "not-there")
PICKED = SelectorWatch("all", CONFIGMAPS, NS, LabelSelector.parse("app=hello"))


class FakeCaches:
    """cached_versions from a dict; a request it lacks is one it cannot answer (None)."""

    def __init__(self, versions: dict[WatchRequest, Versions]) -> None:
        self.versions = versions

    def cached_versions(self, request: WatchRequest) -> Versions | None:
        return self.versions.get(request)


def _passes(caches: FakeCaches) -> SettledPasses:
    return SettledPasses(cast(WatchCoordinator, caches), GREETERS)


def _reads() -> dict[WatchRequest, Versions]:
    return {
        CHILD: {(NS, "hello-cm"): "11"},
        MISSING: {},
        PICKED: {(NS, "a"): "12", (NS, "b"): "13"},
    }


def _caches() -> FakeCaches:
    return FakeCaches({PARENT: {KEY: "10"}, **_reads()})


def test_a_named_read_keeps_its_version_alone() -> None:
    passes = _passes(_caches())
    passes.record(KEY, greeter_graph(), "10", _reads())
    entry = passes.memory.recall(SETTLED, (GREETERS, *KEY), "10")
    assert entry is not None
    assert passes.memory.version(SETTLED, (GREETERS, *KEY)) == "10"
    assert dict(entry.reads) == {CHILD: "11", MISSING: None, PICKED: _reads()[PICKED]}


def test_unchanged_caches_confirm_the_pass() -> None:
    graph = greeter_graph()
    passes = _passes(_caches())
    passes.record(KEY, graph, "10", _reads())
    assert passes.unchanged(KEY, graph)
    assert not passes.unchanged(KEY, greeter_graph())  # another graph


def test_any_change_or_unknown_means_changed() -> None:
    graph = greeter_graph()
    changes: list[tuple[WatchRequest, Versions | None]] = [
        (PARENT, {KEY: "20"}),
        (PARENT, {}),
        (CHILD, {(NS, "hello-cm"): "21"}),
        (CHILD, {}),
        (CHILD, None),
        (MISSING, {(NS, "not-there"): "22"}),
        (PICKED, {(NS, "a"): "12"}),
        (PICKED, {(NS, "a"): "12", (NS, "b"): "13", (NS, "c"): "23"}),
    ]
    for request, answer in changes:
        caches = _caches()
        if answer is None:
            del caches.versions[request]
        else:
            caches.versions[request] = answer
        passes = _passes(caches)
        passes.record(KEY, graph, "10", _reads())
        assert not passes.unchanged(KEY, graph), (request, answer)


def test_a_cache_behind_the_pass_own_writes_shows_no_change() -> None:
    """The informer has yet to deliver the pass's last write: an older version (by number, not
    by text: "9" is older than "10") is no change; the event that follows brings it back."""
    graph = greeter_graph()
    lagging: list[tuple[WatchRequest, Versions]] = [
        (PARENT, {KEY: "9"}),
        (CHILD, {(NS, "hello-cm"): "8"}),
        (PICKED, {(NS, "a"): "12", (NS, "b"): "7"}),
    ]
    for request, answer in lagging:
        caches = _caches()
        caches.versions[request] = answer
        passes = _passes(caches)
        passes.record(KEY, graph, "10", _reads())
        assert passes.unchanged(KEY, graph), (request, answer)
    caches = _caches()
    caches.versions[PARENT] = {KEY: "not-a-number"}
    passes = _passes(caches)
    passes.record(KEY, graph, "10", _reads())
    assert not passes.unchanged(KEY, graph)  # versions it cannot compare: changed


def test_every_pass_shares_one_gvr_per_kind() -> None:
    """The watch requests settled passes keep hold the node's GVR: one object per kind, not one
    per pass and child."""
    first, second = greeter_graph(), greeter_graph()
    node_id = next(n for n in first.topological_order if first.node(n).resource)
    gvr = node_gvr(first.node(node_id))
    assert gvr == node_gvr(second.node(node_id))
    assert gvr is node_gvr(second.node(node_id))
