"""Throughput of WorkQueue + Controller with a no-op reconciler (items/s); prints, never asserts.

    .venv/bin/python bench/bench_workqueue.py [--items 50000]

Target: >= 20,000 items/s with 1 and with 16 workers. Rows:
* queue only   add / get / done in one task, no controller: the queue's own ceiling;
* controller   N workers, no-op reconcile, metrics NOOP;
* +prometheus  the same with a PrometheusProvider recording every queue/controller metric.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from kro.runtime.controller import Controller
from kro.runtime.logging import configure
from kro.runtime.metrics import NOOP, MetricsProvider
from kro.runtime.prometheus import PrometheusProvider
from kro.runtime.reconcile import Request, Result
from kro.runtime.workqueue import WorkQueue


class NoOp:
    """Counts reconciles and signals when all expected keys are done."""

    def __init__(self, expected: int) -> None:
        self.count = 0
        self.expected = expected
        self.finished = asyncio.Event()

    async def reconcile(self, request: Request) -> Result:
        self.count += 1
        if self.count == self.expected:
            self.finished.set()
        return Result()


async def queue_only(items: int) -> float:
    queue = WorkQueue[Request]("bench")
    keys = [Request("ns", f"obj-{i}") for i in range(items)]
    started = time.perf_counter()
    for key in keys:
        queue.add(key)
    for _ in range(items):
        key = await queue.get()
        queue.done(key)
    return items / (time.perf_counter() - started)


async def controller(items: int, workers: int, metrics: MetricsProvider) -> float:
    queue = WorkQueue[Request]("bench", metrics=metrics)
    reconciler = NoOp(items)
    ctrl = Controller("bench", reconciler, queue, workers=workers, metrics=metrics)
    keys = [Request("ns", f"obj-{i}") for i in range(items)]
    async with asyncio.TaskGroup() as tg:
        started = time.perf_counter()
        for key in keys:
            queue.add(key)
        tg.create_task(ctrl.run())
        await reconciler.finished.wait()
        elapsed = time.perf_counter() - started
        ctrl.shutdown()
    return items / elapsed


async def main(items: int) -> None:
    configure("console", "warning")
    print(f"items={items}")
    print(f"{'queue only':<28} {await queue_only(items):>10,.0f} items/s")
    for workers in (1, 16):
        rate = await controller(items, workers, NOOP)
        print(f"{f'controller {workers:>2} workers':<28} {rate:>10,.0f} items/s")
    for workers in (1, 16):
        rate = await controller(items, workers, PrometheusProvider())
        print(f"{f'+prometheus {workers:>2} workers':<28} {rate:>10,.0f} items/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=50_000)
    asyncio.run(main(parser.parse_args().items))
