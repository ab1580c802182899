"""M-23: with `--shards=auto` a member cluster's spoke runs on one replica at a time, the one
whose shard range holds the member's point, and a handover is fenced like a namespace's."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from kro.controllers import spokes as spokes_module
from kro.controllers.instance.kinds import Kind
from kro.controllers.members import RegistryMembers
from kro.controllers.spokes import Spokes
from kro.runtime.controller import Admission
from kro.runtime.gvk import GVR
from kro.runtime.sharding import HASH_SPACE, ShardView, assign, contains, spread_hash
from kro.testing.waiting import eventually

KIND = Kind(GVR("x.kro.run", "v1", "apps"), "App", "apps.x.kro.run", "apps", "uid-1")
RGD = {"metadata": {"name": "apps"}}
CRD = {"metadata": {"name": "apps.x.kro.run"}}


@dataclass
class _Member:
    name: str
    ready: bool = True
    local: bool = False


@dataclass
class _Registry:
    names: list[str]
    listeners: list[Any] = field(default_factory=list)

    def subscribe(self, listener: Any) -> None:
        self.listeners.append(listener)

    def members(self) -> list[_Member]:
        return [_Member("local", local=True), *(_Member(n) for n in self.names)]


class _Members:
    def __init__(self, names: list[str]) -> None:
        self.registry = _Registry(names)
        self.clients = {n: object() for n in names}

    def client(self, cluster: str) -> Any:
        return self.clients[cluster]


class _Kinds:
    def __init__(self) -> None:
        self.served: list[tuple[str, int]] = []

    async def serve(self, kind: Kind, revision: int) -> None:
        self.served.append((kind.kind, revision))


class _Dynamic:
    def __init__(self) -> None:
        self.stop = asyncio.Event()

    async def run(self) -> None:
        await self.stop.wait()

    def shutdown(self) -> None:
        self.stop.set()


class _Built:
    """What the App's factory would build, recorded per member."""

    def __init__(self) -> None:
        self.admissions: dict[str, Admission | None] = {}
        self.kinds: dict[str, _Kinds] = {}

    def __call__(self, cluster: str, client: Any, admission: Admission | None) -> Any:
        self.admissions[cluster] = admission
        self.kinds[cluster] = _Kinds()
        return _Dynamic(), self.kinds[cluster]


def _halves() -> tuple[ShardView, str, str]:
    """A view owning the first half, and one member in each half."""
    view = ShardView()
    first, _ = assign(["r0", "r1"]).values()
    view.set_ranges([first])
    names = [f"cluster-{i}" for i in range(20)]
    ours = next(n for n in names if contains([first], spread_hash(n)))
    theirs = next(n for n in names if not contains([first], spread_hash(n)))
    return view, ours, theirs


@pytest.fixture(autouse=True)
def member_crds(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """The member CRD calls, recorded (the real ones are covered by e2e/test_fleet_shards)."""
    calls: dict[str, list[Any]] = {"ensure": [], "current": []}

    async def ensure(client: Any, crd: Any, **_: Any) -> None:
        calls["ensure"].append(client)

    async def current(client: Any, crd: Any, **_: Any) -> bool:
        calls["current"].append(client)
        return True

    monkeypatch.setattr(spokes_module, "ensure_crd", ensure)
    monkeypatch.setattr(spokes_module, "crd_is_current", current)
    return calls


def test_numbered_member_names_spread_over_replicas() -> None:
    """FNV-1a would put `cluster-0` .. `cluster-9` in one narrow band; the members' hash
    spreads them, so three replicas each get some of ten members."""
    ranges = assign(["r0", "r1", "r2"]).values()
    counts = [sum(contains([r], spread_hash(f"cluster-{i}")) for i in range(10)) for r in ranges]
    assert all(counts), counts


async def test_the_leader_installs_every_member_crd_but_serves_only_its_members(
    member_crds: dict[str, list[Any]],
) -> None:
    view, ours, theirs = _halves()
    members = _Members([ours, theirs])
    built = _Built()
    spokes = Spokes(cast(RegistryMembers, members), built, share=view)
    status = await spokes.serve(RGD, CRD, KIND, 3, allow_breaking=False)
    assert [s["name"] for s in status if s["kindReady"]] == [ours, theirs]
    assert member_crds["ensure"] == [members.clients[ours], members.clients[theirs]]
    assert list(built.kinds) == [ours]
    assert built.kinds[ours].served == [("App", 3)]
    await spokes.close()


async def test_a_follower_serves_its_members_once_their_crd_is_there(
    member_crds: dict[str, list[Any]],
) -> None:
    view, ours, theirs = _halves()
    spokes = Spokes(cast(RegistryMembers, _Members([ours, theirs])), built := _Built(), share=view)
    assert await spokes.follow(RGD, CRD, KIND, 2)
    assert member_crds["ensure"] == []
    assert list(built.kinds) == [ours]
    await spokes.close()


async def test_the_spoke_admits_keys_only_while_the_view_owns_its_member() -> None:
    view, ours, theirs = _halves()
    built = _Built()
    spokes = Spokes(cast(RegistryMembers, _Members([ours, theirs])), built, share=view)
    await spokes.follow(RGD, CRD, KIND, 1)
    admission = built.admissions[ours]
    assert admission is not None
    assert admission.begin("default", "a")  # ours: admitted, and in flight
    view.set_ranges([])  # the view shrinks: the member is handed over
    assert not admission.begin("default", "b")
    assert view.inflight_outside() == 1  # the drain waits for the reconcile in flight
    admission.end("default", "a")
    assert view.inflight_outside() == 0
    await spokes.close()


async def test_a_handover_retires_the_spoke_and_a_grown_range_serves_again() -> None:
    view, ours, theirs = _halves()
    gained: list[bool] = []
    retired: list[str] = []
    built = _Built()
    spokes = Spokes(
        cast(RegistryMembers, _Members([ours, theirs])),
        built,
        share=view,
        gained=lambda: gained.append(True),
        retired=retired.append,
    )
    runner = asyncio.create_task(spokes.run())
    await spokes.follow(RGD, CRD, KIND, 1)
    assert spokes.owns(ours)
    assert not spokes.owns(theirs)
    view.set_ranges([])
    await eventually(_when(lambda: not spokes._spokes), what="the spoke retired", timeout_s=5)
    assert not gained
    assert retired == [ours]  # its series and informers stop counting on this replica
    view.set_ranges([(0, HASH_SPACE)])  # grown over both members
    await eventually(_when(lambda: bool(gained)), what="the RGDs queued again", timeout_s=5)
    spokes.shutdown()
    await asyncio.wait_for(runner, 5)


def _when(check: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    async def probe() -> bool:
        return check()

    return probe
