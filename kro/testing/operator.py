"""kro.testing.operator: run an operator in the test's process for the length of a block.

An operator's test wants the operator running exactly as `run(setup)` runs it (the same
manager, cache, controllers and client), against a real API server or the fake one, started
before the test acts, stopped and drained after, and any fatal error of the operator failing
the test instead of a timeout. kopf ships `KopfRunner` for this, controller-runtime's envtest
leaves it to every suite; here it is one context manager around the set-up function:

    from kro.testing.operator import run_operator

    async def test_the_labeller(kube_cluster, kube_namespace):          # pytest-asyncio
        async with run_operator(labeller.setup, kubeconfig=kube_cluster.kubeconfig,
                                namespace=kube_namespace) as op:
            await op.client.create(CONFIGMAPS, configmap("a"), namespace=kube_namespace)
            await op.wait_for(lambda: labelled("a"), what="a's label")
            assert op.reconciles("configmap-labeller", result="error") == 0

    def test_the_labeller_from_sync_code(kube_cluster, kube_namespace):   # a plain test
        with run_operator(labeller.setup, kubeconfig=...) as op:          # in a thread
            kubectl("apply", "-f", "cm.yaml")
            op.wait_for_reconciles(2, controller="configmap-labeller")

On entry the manager runs and every informer has synced (so the controllers are about to
start and see everything that exists); on exit it is stopped gracefully (queued reconciles
finish) and the failure that stopped it early, if any, is raised. `async with` runs the
operator in the test's event loop; plain `with` runs it in a thread with its own loop and
hands back a `BlockingOperator` whose waits block (use it from synchronous tests, with
kubectl or a synchronous client; `call` runs a coroutine in the operator's loop).

Counts come from the manager's own metrics (controller_runtime_reconcile_total), so they mean
what an operator's dashboard means: judged reconciles per controller and result ("success",
"error", "requeue", "requeue_after").
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import Future
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from kro.runtime.client import Client
from kro.runtime.manager import Manager, ManagerOptions

from . import waiting

__all__ = ["BlockingOperator", "OperatorFailed", "RunningOperator", "run_operator"]

T = TypeVar("T")
Setup = Callable[[Manager], Awaitable[None] | None]
Probe = Callable[[], Awaitable[T | None] | T | None]
RECONCILES = "controller_runtime_reconcile_total"


class OperatorFailed(AssertionError):
    """The operator stopped on its own while the test was waiting (its error is the cause)."""


def reconcile_count(
    manager: Manager, controller: str | None = None, result: str | None = None
) -> int:
    """controller_runtime_reconcile_total of `manager`, for one controller (None: all) and
    one result (None: every result)."""
    total = 0.0
    for family in manager.metrics.registry.collect():
        for sample in family.samples:
            if sample.name != RECONCILES:
                continue
            labels = sample.labels
            if controller is not None and labels.get("controller") != controller:
                continue
            if result is not None and labels.get("result") != result:
                continue
            total += sample.value
    return int(total)


class RunningOperator:
    """An operator run in this process (see the module docstring); build with `run_operator`.

    manager: the operator's Manager (its metrics, cache, reader and client).
    client: the connection it runs on (the one given, or its own from `kubeconfig`).
    """

    def __init__(
        self,
        setup: Setup,
        *,
        client: Client | None = None,
        kubeconfig: str | Path | None = None,
        namespace: str | None = None,
        name: str = "operator-under-test",
        options: ManagerOptions | None = None,
        ready_timeout_s: float = 60.0,
        stop_timeout_s: float = 30.0,
    ) -> None:
        self._setup = setup
        self._given_client = client
        self._kubeconfig = None if kubeconfig is None else str(kubeconfig)
        self._options = options or ManagerOptions(
            handle_signals=False,  # the test process's signals are pytest's
            graceful_shutdown_timeout_s=min(10.0, stop_timeout_s),
            namespace=namespace,
            name=name,
        )
        self._ready_timeout_s = ready_timeout_s
        self._stop_timeout_s = stop_timeout_s
        self._client: Client | None = None
        self._manager: Manager | None = None
        self._task: asyncio.Task[None] | None = None
        self._thread: _OperatorThread | None = None

    # -- what a test reads ----------------------------------------------------------------------

    @property
    def manager(self) -> Manager:
        if self._manager is None:
            raise RuntimeError("the operator is not running: use `async with run_operator(...)`")
        return self._manager

    @property
    def client(self) -> Client:
        if self._client is None:
            raise RuntimeError("the operator is not running: use `async with run_operator(...)`")
        return self._client

    def reconciles(self, controller: str | None = None, result: str | None = None) -> int:
        """Reconciles judged so far, by one controller (None: all) with one result (None:
        any of success, error, requeue, requeue_after)."""
        return reconcile_count(self.manager, controller, result)

    def check(self) -> None:
        """Raise OperatorFailed if the operator has stopped on its own."""
        task = self._task
        if task is None or not task.done():
            return
        error = None if task.cancelled() else task.exception()
        raise OperatorFailed(f"the operator stopped while the test ran: {error!r}") from error

    # -- waiting --------------------------------------------------------------------------------

    async def wait_for(
        self, probe: Probe[T], *, what: str, timeout_s: float = 30.0, interval_s: float = 0.1
    ) -> T:
        """Call `probe()` (plain or async) until it returns something truthy and return it;
        fail after `timeout_s`, or at once if the operator stops (OperatorFailed)."""

        async def checked() -> T | None:
            self.check()
            value = probe()
            if inspect.isawaitable(value):
                return await value
            return value

        return await waiting.eventually(
            checked, what=what, timeout_s=timeout_s, interval_s=interval_s
        )

    async def wait_for_reconciles(
        self,
        count: int,
        *,
        controller: str | None = None,
        result: str | None = None,
        timeout_s: float = 30.0,
    ) -> int:
        """Wait until at least `count` reconciles (of `controller`, with `result`) were judged;
        returns the count reached."""
        scope = f"{controller or 'all controllers'}" + (f", result={result}" if result else "")

        def reached() -> int | None:
            seen = self.reconciles(controller, result)
            return seen if seen >= count else None

        return await self.wait_for(
            reached, what=f"{count} reconciles ({scope})", timeout_s=timeout_s, interval_s=0.05
        )

    # -- async with: in the test's event loop ----------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop(raise_failure=exc is None)

    async def start(self) -> None:
        """Connect, build the manager, call `setup`, run it until its caches have synced."""
        client = self._given_client
        if client is None:
            client = await Client.from_kubeconfig(self._kubeconfig)
        self._client = client
        try:
            manager = self._manager = Manager(self._options, client=client)
            await client.mapper.refresh()  # kinds named in setup resolve at once, as run() does
            result = self._setup(manager)
            if inspect.isawaitable(result):
                await result
            self._task = asyncio.create_task(manager.run(), name="kro.testing.operator")
            await self.wait_for(
                manager.is_ready,
                what="the operator's caches to sync",
                timeout_s=self._ready_timeout_s,
            )
        except BaseException:
            await self.stop(raise_failure=False)
            raise

    async def stop(self, *, raise_failure: bool = True) -> None:
        """Stop gracefully (queued reconciles finish) and close a connection of our own; raise
        what stopped the operator early, if anything did and `raise_failure`."""
        task, self._task = self._task, None
        try:
            if task is not None:
                if not task.done() and self.manager.may_work():  # a failing one stops itself;
                    self.manager.stop()  # a second stop() would cancel it, hiding the failure
                done, _ = await asyncio.wait({task}, timeout=self._stop_timeout_s)
                if not done:
                    task.cancel()
                    await asyncio.wait({task})
                    if raise_failure:
                        raise OperatorFailed(
                            f"the operator did not stop within {self._stop_timeout_s:g}s"
                        )
                error = None if task.cancelled() else task.exception()
                if error is not None and raise_failure:
                    raise OperatorFailed(f"the operator failed: {error!r}") from error
        finally:
            if self._given_client is None and self._client is not None:
                await self._client.close()

    # -- with: in a thread of its own ------------------------------------------------------------

    def __enter__(self) -> BlockingOperator:
        self._thread = _OperatorThread(self)
        self._thread.start(self._ready_timeout_s + 30.0)
        return BlockingOperator(self, self._thread)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.stop(self._stop_timeout_s + 30.0, raise_failure=exc is None)


def run_operator(
    setup: Setup,
    *,
    client: Client | None = None,
    kubeconfig: str | Path | None = None,
    namespace: str | None = None,
    name: str = "operator-under-test",
    options: ManagerOptions | None = None,
    ready_timeout_s: float = 60.0,
    stop_timeout_s: float = 30.0,
) -> RunningOperator:
    """Run `setup`'s operator for a `with` or `async with` block (module docstring).

    client: run on this connection (a fake API server's, say); else connect with `kubeconfig`
        (else $KUBECONFIG, ~/.kube/config, in-cluster), and close it on exit.
    namespace: where the controllers watch (the runner's --namespace); None: everywhere.
    name: the operator's name (field manager, Event source).
    options: the whole ManagerOptions instead (namespace and name are then ignored).
    """
    return RunningOperator(
        setup,
        client=client,
        kubeconfig=kubeconfig,
        namespace=namespace,
        name=name,
        options=options,
        ready_timeout_s=ready_timeout_s,
        stop_timeout_s=stop_timeout_s,
    )


class _OperatorThread:
    """A thread with an event loop of its own that runs one RunningOperator."""

    def __init__(self, operator: RunningOperator) -> None:
        self.operator = operator
        self.loop: asyncio.AbstractEventLoop | None = None
        self._started = threading.Event()
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="kro-operator", daemon=True)

    def start(self, timeout_s: float) -> None:
        self._thread.start()
        if not self._started.wait(timeout_s):
            raise OperatorFailed(f"the operator did not start within {timeout_s:g}s")
        if self._error is not None:
            raise self._error

    def stop(self, timeout_s: float, *, raise_failure: bool) -> None:
        if self.loop is not None and self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            raise OperatorFailed(f"the operator did not stop within {timeout_s:g}s")
        if raise_failure and self._error is not None:
            raise self._error

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> Future[T]:
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def _main(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            await self.operator.start()
        except BaseException as error:
            self._error = error
            self._started.set()
            return
        self._started.set()
        await self._stop.wait()
        try:
            await self.operator.stop()
        except BaseException as error:
            self._error = error


class BlockingOperator:
    """What `with run_operator(...)` hands a synchronous test: the same reads, blocking waits,
    and `call` to run a coroutine (the operator's async client) in the operator's loop."""

    def __init__(self, operator: RunningOperator, thread: _OperatorThread) -> None:
        self._operator = operator
        self._thread = thread

    @property
    def manager(self) -> Manager:
        return self._operator.manager

    @property
    def client(self) -> Client:
        """The operator's connection; use it through `call` (it belongs to that loop)."""
        return self._operator.client

    def reconciles(self, controller: str | None = None, result: str | None = None) -> int:
        return self._operator.reconciles(controller, result)

    def call(self, fn: Callable[..., Coroutine[Any, Any, T]], *args: Any, **kwargs: Any) -> T:
        """`await fn(*args, **kwargs)` in the operator's loop, from this thread."""
        return self._thread.submit(fn(*args, **kwargs)).result()

    def wait_for(
        self,
        probe: Callable[[], T | None],
        *,
        what: str,
        timeout_s: float = 30.0,
        interval_s: float = 0.1,
    ) -> T:
        """Call `probe()` in this thread until it returns something truthy; fail after
        `timeout_s`, or at once if the operator stops."""
        deadline = time.monotonic() + timeout_s
        last: T | None = None
        while True:
            self._operator.check()
            last = probe()
            if last:
                return last
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {timeout_s}s waiting for {what}; last: {last!r}"
                )
            time.sleep(interval_s)

    def wait_for_reconciles(
        self,
        count: int,
        *,
        controller: str | None = None,
        result: str | None = None,
        timeout_s: float = 30.0,
    ) -> int:
        """`RunningOperator.wait_for_reconciles`, blocking this thread."""
        return self.call(
            self._operator.wait_for_reconciles,
            count,
            controller=controller,
            result=result,
            timeout_s=timeout_s,
        )
