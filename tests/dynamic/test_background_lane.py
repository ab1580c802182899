"""The work queue's background lane: what a (re)start finds settled waits behind new work, a
real event promotes it, and neither goes through the rate limiter kept for failures."""

from __future__ import annotations

from kro.runtime.clock import FakeClock
from kro.runtime.workqueue import WorkQueue


async def test_background_keys_come_after_front_keys_and_an_add_promotes_them() -> None:
    queue = WorkQueue[str](clock=FakeClock())
    for key in ("a", "b", "c"):
        queue.add_background(key)
    queue.add("new")
    queue.add("b")  # an event for a waiting key: it moves to the front lane, once
    assert len(queue) == 4
    taken = [await queue.get() for _ in range(4)]
    assert taken == ["new", "b", "a", "c"]
    for key in taken:
        queue.done(key)
    assert len(queue) == 0
    assert queue.num_requeues("a") == 0


async def test_a_background_add_while_processing_waits_for_done() -> None:
    queue = WorkQueue[str](clock=FakeClock())
    queue.add("a")
    assert await queue.get() == "a"
    queue.add_background("a")
    queue.add("b")
    assert await queue.get() == "b"
    queue.done("a")
    queue.done("b")
    assert await queue.get() == "a"
    queue.done("a")
    queue.shutdown()
    assert len(queue) == 0
