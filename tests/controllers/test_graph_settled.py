"""A Graph whose last pass settled is not read again while nothing it read changed: its own
status write coming back, a resync or a requeue cost no request (kro.controllers.settled, as
for RGD instances). A change of the Graph, of anything it read, or a cache that cannot tell
brings the full reconcile back; so does a recompiled program."""

from __future__ import annotations

from typing import Any, cast

from kro.controllers.graph import GraphOptions, GraphReconciler
from kro.controllers.graph.inventory import GRAPHS
from kro.dynamic import ObjectRef, ScalarWatch
from kro.dynamic.watches import Versions, WatchRequest
from kro.graph.model import Graph
from kro.runtime.client import Client
from kro.runtime.errors import NotFound
from kro.runtime.gvk import GVR
from kro.runtime.reconcile import Result

NS, NAME = "team", "decorator"
REF = ObjectRef(GRAPHS, NS, NAME)
SELF = ScalarWatch("", GRAPHS, NS, NAME)
POLICY = ScalarWatch("policy", GVR("networking.k8s.io", "v1", "networkpolicies"), NS, "deny")


class Caches:
    """The caches as the settled check uses them: versions per request (a request they lack
    cannot be answered). The Graph's own version comes from the same table here; in kro, from
    the Graph controller's informer, whose events enqueue the Graph."""

    def __init__(self, versions: dict[WatchRequest, Versions]) -> None:
        self.versions = versions

    def cached_versions(self, request: WatchRequest) -> Versions | None:
        return self.versions.get(request)

    async def forget(self, ref: ObjectRef) -> None:
        return None


class Reads:
    """The API server: every GET of the Graph is counted (it is gone: the test needs only
    to know whether the reconcile went past the settled check)."""

    def __init__(self) -> None:
        self.gets = 0

    async def get(self, gvr: GVR, name: str, **_: Any) -> dict[str, Any]:
        self.gets += 1
        raise NotFound(status=404, reason="NotFound", message=f"{name} not found")


async def _settled(caches: Caches, reads: Reads) -> tuple[GraphReconciler, Graph]:
    reconciler = GraphReconciler(
        client=cast(Client, reads),
        resolver=cast(Any, None),
        watches=cast(Any, caches),
        applier=cast(Any, None),
        options=GraphOptions(controller_username="system:serviceaccount:kro-system:kro"),
        graph_versions=caches.cached_versions,
    )
    program = cast(Graph, object())

    async def compiled() -> Graph:
        return program

    await reconciler.programs.program("Graph", NS, NAME, "spec-1", compiled)
    reconciler._settled.record((NS, NAME), program, "7", {POLICY: {(NS, "deny"): "3"}})
    return reconciler, program


async def test_a_settled_graph_is_not_read_again_until_something_it_read_changes() -> None:
    caches = Caches({SELF: {(NS, NAME): "7"}, POLICY: {(NS, "deny"): "3"}})
    reads = Reads()
    reconciler, _ = await _settled(caches, reads)
    assert await reconciler.load(REF) == Result()
    assert reads.gets == 0

    caches.versions[POLICY] = {(NS, "deny"): "4"}  # someone edited the policy
    assert await reconciler.load(REF) is None  # read again (gone, in this test)
    assert reads.gets == 1


async def test_a_graph_changed_or_recompiled_or_unknown_to_the_cache_is_read() -> None:
    for versions, recompile in (
        ({SELF: {(NS, NAME): "8"}, POLICY: {(NS, "deny"): "3"}}, False),  # the Graph changed
        ({POLICY: {(NS, "deny"): "3"}}, False),  # its own kind not cached: cannot tell
        ({SELF: {(NS, NAME): "7"}, POLICY: {(NS, "deny"): "3"}}, True),  # a CRD it names moved
    ):
        caches = Caches(versions)
        reads = Reads()
        reconciler, _ = await _settled(caches, reads)
        if recompile:
            reconciler.programs.forget("Graph", NS, NAME)
        assert await reconciler.load(REF) is None
        assert reads.gets == 1
