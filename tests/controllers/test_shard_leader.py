"""Sharded replicas (kro.controllers.leadership): every replica runs the RGD, GraphRevision and
dynamic controllers, only the leader writes RGDs, GraphRevisions and CRDs, and every replica
reconciles the instances of its own namespaces. Two whole KroApps share one fake API server;
each has its own client (told apart on the wire by its User-Agent) and its own ShardView (the
fake ignores shardSelector, so each filters on the client, as with the feature gate off)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from rgd_app_fakes import KroFakeApi, eventually, instance, kind_rgd, make_app, started

from kro.api.names import LABEL_GRAPH_REVISION_HASH
from kro.controllers.app import KroApp
from kro.controllers.crd import CRDS
from kro.controllers.graphrevision import GRAPH_REVISIONS
from kro.controllers.registry import RevisionState
from kro.controllers.rgd import RGDS
from kro.runtime.client import Client, ClientOptions
from kro.runtime.config import ConnectionConfig
from kro.runtime.errors import NotFound
from kro.runtime.gvk import GVR
from kro.runtime.prometheus import PrometheusProvider
from kro.runtime.sharding import HASH_SPACE, ShardView, fnv1a64

HALF = HASH_SPACE // 2
LOW, HIGH = (0, HALF), (HALF, HASH_SPACE)
WRITES = ("POST", "PUT", "PATCH", "DELETE")
KRO_PATHS = (
    f"/apis/{RGDS.group}/",  # RGDs
    f"/apis/{GRAPH_REVISIONS.group}/",  # GraphRevisions
    "/apis/apiextensions.k8s.io/",  # CRDs
)


def namespace_in(low: int, high: int, prefix: str) -> str:
    """A namespace name whose hash falls in [low, high)."""
    for i in range(10_000):
        name = f"{prefix}-{i}"
        if low <= fnv1a64(name) < high:
            return name
    raise AssertionError("no namespace name found")


NS_LEADER = namespace_in(*LOW, "lead")
NS_FOLLOWER = namespace_in(*HIGH, "follow")


class Replica:
    """One KroApp with its own client, shard view and leadership flag."""

    def __init__(self, name: str, app: KroApp, view: ShardView) -> None:
        self.name = name
        self.app = app
        self.view = view
        self.leading = False

    def promote(self) -> None:
        """What winning the Lease does: the gate opens and `Promotion` queues everything."""
        self.leading = True
        self.app.requeue_all()


@pytest.fixture
async def test_client(kro_api: KroFakeApi) -> AsyncIterator[Client]:
    async with _client(kro_api, "test") as client:
        yield client


@contextlib.asynccontextmanager
async def _client(api: KroFakeApi, agent: str) -> AsyncIterator[Client]:
    options = ClientOptions(qps=10_000.0, burst=10_000, max_retries=0, user_agent=agent)
    async with Client.from_config(ConnectionConfig(server=api.url), options) as client:
        yield client


@contextlib.asynccontextmanager
async def replica(
    api: KroFakeApi, name: str, ranges: tuple[int, int], *, leading: bool
) -> AsyncIterator[Replica]:
    """A started KroApp whose writes are gated on `Replica.leading` from the very start;
    stopped like kill -9 as far as the others can tell: nothing is handed over."""
    async with _client(api, name) as client:
        view = ShardView(identity=name)
        view.set_ranges([ranges])
        provider = PrometheusProvider(process_metrics=False)
        app = make_app(client, provider, shard=view)
        rep = Replica(name, app, view)
        rep.leading = leading
        app.writes.bind(lambda: rep.leading)
        async with started(app):
            yield rep


def kro_writes(api: KroFakeApi, agent: str) -> list[str]:
    """`METHOD path` of every write `agent` sent for an RGD, a GraphRevision or a CRD."""
    return [
        f"{r.method} {r.path}"
        for r in api.requests
        if r.method in WRITES
        and r.headers.get("user-agent", "").startswith(agent)
        and r.path.startswith(KRO_PATHS)
    ]


def writes_to(api: KroFakeApi, agent: str, path_part: str) -> int:
    return sum(
        1
        for r in api.requests
        if r.method in WRITES
        and r.headers.get("user-agent", "").startswith(agent)
        and path_part in r.path
    )


async def active(client: Client, name: str) -> bool:
    try:
        rgd = await client.get(RGDS, name)
    except NotFound:
        return False
    return (rgd.get("status") or {}).get("state") == "Active"


async def serving(rep: Replica, client: Client, name: str) -> GVR | None:
    try:
        uid = (await client.get(RGDS, name))["metadata"]["uid"]
    except NotFound:
        return None
    return rep.app.rgd_reconciler.kinds.served().get(uid)


async def instances_ready(client: Client, gvr: GVR, names: list[tuple[str, str]]) -> bool:
    for ns, name in names:
        try:
            obj = await client.get(gvr, name, namespace=ns)
        except NotFound:
            return False
        if (obj.get("status") or {}).get("state") != "ACTIVE":
            return False
    return True


async def add_instances(client: Client, gvr: GVR, kind: str, name: str) -> list[tuple[str, str]]:
    made = []
    for ns in (NS_LEADER, NS_FOLLOWER):
        await client.create(gvr, instance(kind, name, ns), namespace=ns)
        made.append((ns, name))
    return made


async def test_only_the_leader_writes_rgds_revisions_and_crds_and_both_reconcile_instances(
    kro_api: KroFakeApi, test_client: Client
) -> None:
    async with (
        replica(kro_api, "replica-a", LOW, leading=True) as leader,
        replica(kro_api, "replica-b", HIGH, leading=False) as follower,
    ):
        await test_client.apply(
            RGDS, kind_rgd("shared", "Shared"), field_manager="test", force=True
        )
        await eventually(lambda: active(test_client, "shared"), what="RGD Active")
        gvr = await eventually(lambda: serving(follower, test_client, "shared"), what="follower")
        assert await serving(leader, test_client, "shared") == gvr
        entry = follower.app.registry.latest("shared")
        assert entry is not None
        assert entry.state is RevisionState.ACTIVE

        made = await add_instances(test_client, gvr, "Shared", "one")
        await eventually(lambda: instances_ready(test_client, gvr, made), what="instances")

        leader_writes = kro_writes(kro_api, "replica-a")
        assert any("POST" in w and "graphrevisions" in w for w in leader_writes)
        assert any("POST" in w and "customresourcedefinitions" in w for w in leader_writes)
        assert any("resourcegraphdefinitions/shared/status" in w for w in leader_writes)
        assert kro_writes(kro_api, "replica-b") == []
        # Each replica wrote to the instance of its own namespace only.
        assert writes_to(kro_api, "replica-b", f"/namespaces/{NS_FOLLOWER}/shareds/one") > 0
        assert writes_to(kro_api, "replica-b", f"/namespaces/{NS_LEADER}/") == 0
        assert writes_to(kro_api, "replica-a", f"/namespaces/{NS_FOLLOWER}/") == 0
        assert leader.app.owned_instances() == 1
        assert follower.app.owned_instances() == 1


async def test_a_follower_serves_a_graph_only_once_the_leader_has_updated_the_crd(
    kro_api: KroFakeApi, test_client: Client
) -> None:
    """No leader: a follower compiles nothing (no verdict) and registers nothing."""
    async with replica(kro_api, "replica-b", HIGH, leading=False) as follower:
        await test_client.apply(
            RGDS, kind_rgd("lonely", "Lonely"), field_manager="test", force=True
        )
        await asyncio.sleep(0.5)
        assert (await test_client.get(RGDS, "lonely")).get("status") is None
        assert (await test_client.list(GRAPH_REVISIONS))["items"] == []
        assert (await test_client.list(CRDS))["items"] == []
        assert follower.app.rgd_reconciler.kinds.served() == {}
        assert kro_writes(kro_api, "replica-b") == []


async def test_a_promoted_follower_takes_over_the_writes_without_stopping_its_instances(
    kro_api: KroFakeApi, test_client: Client
) -> None:
    async with replica(kro_api, "replica-b", HIGH, leading=False) as follower:
        async with replica(kro_api, "replica-a", LOW, leading=True):
            await test_client.apply(RGDS, kind_rgd("old", "Old"), field_manager="test", force=True)
            await eventually(lambda: active(test_client, "old"), what="old Active")
            gvr_old = await eventually(lambda: serving(follower, test_client, "old"), what="b")
            made_old = await add_instances(test_client, gvr_old, "Old", "x")
            await eventually(lambda: instances_ready(test_client, gvr_old, made_old), what="x")
        # The leader is gone (its context stopped every task of it, as kill -9 would). An RGD
        # created now is left alone until the follower wins the Lease.
        await test_client.apply(RGDS, kind_rgd("new", "New"), field_manager="test", force=True)
        await asyncio.sleep(0.3)
        assert not await active(test_client, "new")
        assert kro_writes(kro_api, "replica-b") == []

        follower.view.set_ranges([(0, HASH_SPACE)])  # the dead member's range moves to it
        follower.promote()
        await eventually(lambda: active(test_client, "new"), what="new Active")
        gvr_new = await eventually(lambda: serving(follower, test_client, "new"), what="new")
        made_new = await add_instances(test_client, gvr_new, "New", "y")
        await eventually(lambda: instances_ready(test_client, gvr_new, made_new), what="y")
        written = kro_writes(kro_api, "replica-b")
        assert any("POST" in w and "graphrevisions" in w for w in written)
        assert any("POST" in w and "customresourcedefinitions" in w for w in written)
        assert any("resourcegraphdefinitions/new/status" in w for w in written)

        # The old RGD's instances, in both namespaces, are reconciled by the promoted replica.
        await test_client.patch(
            gvr_old, "x", {"spec": {"name": "changed"}}, namespace=NS_LEADER, patch_type="merge"
        )

        async def reconciled() -> bool:
            cm = await test_client.get(GVR("", "v1", "configmaps"), "x-old", namespace=NS_LEADER)
            return "changed" in str(cm.get("data"))

        await eventually(reconciled, what="instance of the dead leader's namespace reconciled")


async def test_a_follower_records_the_leaders_verdict_on_a_failed_revision(
    kro_api: KroFakeApi, test_client: Client
) -> None:
    """A revision the leader marked GraphVerified=False is Failed on the follower too, with the
    leader's message, and never compiled there."""
    async with replica(kro_api, "replica-b", HIGH, leading=False) as follower:
        revision = {
            "apiVersion": GRAPH_REVISIONS.api_version,
            "kind": "GraphRevision",
            "metadata": {"name": "broken-r1", "labels": {LABEL_GRAPH_REVISION_HASH: "h"}},
            "spec": {"revision": 1, "snapshot": {"name": "broken", "generation": 1, "spec": {}}},
        }
        created = await test_client.create(GRAPH_REVISIONS, revision)
        await asyncio.sleep(0.2)
        assert follower.app.registry.get("broken", 1) is None  # no verdict yet: nothing
        created["status"] = {
            "conditions": [
                {
                    "type": "GraphVerified",
                    "status": "False",
                    "reason": "InvalidGraph",
                    "message": "the leader says no",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ]
        }
        await test_client.update_status(GRAPH_REVISIONS, created)

        def failed() -> Any:
            entry = follower.app.registry.get("broken", 1)
            return entry if entry is not None and entry.state is RevisionState.FAILED else None

        entry = await eventually(_async(failed), what="Failed on the follower")
        assert entry.error == "the leader says no"
        assert kro_writes(kro_api, "replica-b") == []


def _async(probe: Callable[[], Any]) -> Callable[[], Any]:
    async def run() -> Any:
        return probe()

    return run
