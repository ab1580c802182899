"""kro.runtime.sharding: the hash, the assignment, the selector syntax and the fencing rule."""

from __future__ import annotations

import itertools

import pytest

from kro.runtime.clock import FakeClock
from kro.runtime.sharding import (
    HASH_SPACE,
    ShardingConfig,
    ShardMembership,
    ShardView,
    assign,
    fnv1a64,
    intersect,
    selector,
)
from kro.testing.leases import FakeLeases


def test_fnv1a64_matches_the_published_vectors() -> None:
    assert fnv1a64("") == 0xCBF29CE484222325
    assert fnv1a64("a") == 0xAF63DC4C8601EC8C
    assert fnv1a64("foobar") == 0x85944171F73967E8


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
def test_assign_covers_the_space_contiguously(n: int) -> None:
    members = [f"m{i}" for i in reversed(range(n))]
    ranges = sorted(assign(members).values())
    assert ranges[0][0] == 0
    assert ranges[-1][1] == HASH_SPACE
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    assert assign(members) == assign(sorted(members))  # order-independent


def test_selector_uses_the_servers_bound_syntax() -> None:
    text = selector([(0, 1 << 63), (1 << 63, HASH_SPACE)])
    assert text == (
        "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')"
        " || shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')"
    )
    assert selector([]) is None


def test_intersect() -> None:
    assert intersect([(0, 10)], [(5, 20)]) == ((5, 10),)
    assert intersect([(0, 10)], [(10, 20)]) == ()


def test_view_admits_only_owned_namespaces_and_counts_in_flight() -> None:
    view = ShardView()
    ns = "team-a"
    assert not view.begin(ns)
    view.set_ranges([(0, HASH_SPACE)])
    assert view.begin(ns)
    view.set_ranges([])
    assert view.inflight_outside() == 1
    view.end(ns)
    assert view.inflight_outside() == 0


Leases = FakeLeases


def _member(api: Leases, clock: FakeClock, name: str) -> ShardMembership:
    cfg = ShardingConfig(identity=name, namespace="kro", retry_period_s=1.0)
    return ShardMembership(api, cfg, ShardView(identity=name), clock=clock)


def _owners(members: list[ShardMembership], namespace: str) -> list[str]:
    return [m.config.identity for m in members if m.view.owns(namespace)]


async def _rounds(members: list[ShardMembership], clock: FakeClock, n: int) -> None:
    for _ in range(n):
        for m in members:
            await m.step()
        clock.jump(1.0)


NAMESPACES = [f"ns-{i:x}{i * 7919:x}" for i in range(200)]


async def test_members_split_the_space_and_never_overlap_while_joining() -> None:
    api, clock = Leases(), FakeClock()
    members = [_member(api, clock, "a")]
    await _rounds(members, clock, 2)
    assert members[0].view.ranges == ((0, HASH_SPACE),)
    for name in ("b", "c"):
        members.append(_member(api, clock, name))
        for _ in range(6):
            await _rounds(members, clock, 1)
            for ns in NAMESPACES:  # at every step: at most one owner
                assert len(_owners(members, ns)) <= 1
    for ns in NAMESPACES:
        assert len(_owners(members, ns)) == 1
    expected = assign(["kro-shard-a", "kro-shard-b", "kro-shard-c"])
    for m in members:
        assert m.view.ranges == (expected[m.name],)


async def test_a_dead_member_range_moves_after_the_lease_duration() -> None:
    api, clock = Leases(), FakeClock()
    members = [_member(api, clock, n) for n in ("a", "b", "c")]
    await _rounds(members, clock, 6)
    dead = members.pop(1)
    api.down.add("b")
    # b's own step would fence it: it can no longer renew.
    moved_at = None
    for second in range(30):
        await _rounds(members, clock, 1)
        await dead.step()
        for ns in NAMESPACES:
            assert len(_owners([*members, dead], ns)) <= 1
        if moved_at is None and all(len(_owners(members, ns)) == 1 for ns in NAMESPACES):
            moved_at = second
    assert moved_at is not None
    assert moved_at <= 15 + 3
    assert dead.view.ranges == ()  # fenced after its renew deadline


async def test_graceful_leave_hands_over_at_once() -> None:
    api, clock = Leases(), FakeClock()
    members = [_member(api, clock, n) for n in ("a", "b")]
    await _rounds(members, clock, 6)
    leaving = members.pop()
    await leaving._leave()
    await _rounds(members, clock, 3)
    assert members[0].view.ranges == ((0, HASH_SPACE),)
