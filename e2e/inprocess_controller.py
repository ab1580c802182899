"""kro's controller inside the test process: `kro controller` on a thread with its own event loop.

The e2e tests talk to the cluster with the synchronous AdminApi and wait with `wait_for`, which
would block an event loop shared with the controller. So the controller gets a thread and a
loop of its own: `run_controller(parse_controller_args([...]))`, exactly what `kro controller`
runs, with probes and metrics on free 127.0.0.1 ports. The tests reach it the way a kubelet or
Prometheus would, over HTTP.

    with InProcessController(kubeconfig) as controller:
        controller.healthz()          # HTTP status of /healthz
        controller.metrics()          # parsed /metrics

Stopping cancels the controller's task (it unwinds its informers, workers and HTTP server) and
joins the thread; a controller that died on its own is reported with its exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from prometheus_client.parser import text_string_to_metric_families

from kro.cli.controller import run_controller
from kro.cli.flags import parse_controller_args
from kro.runtime import logging as kro_logging
from kro.runtime.client import Client
from kro.testing.wait import wait_for

_HTTP_TIMEOUT_S = 5.0


def free_loopback_ports(count: int) -> list[int]:
    """`count` distinct ports that were free on 127.0.0.1 a moment ago."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


@dataclass(frozen=True, slots=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


@dataclass(frozen=True, slots=True)
class Scrape:
    """One /metrics response: the declared type of each metric name, and every sample."""

    text: str
    types: dict[str, str] = field(default_factory=dict)
    samples: tuple[Sample, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Scrape:
        types: dict[str, str] = {}
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split(" ", 3)
                types[name] = kind
        samples = tuple(
            Sample(s.name, dict(s.labels), float(s.value))
            for family in text_string_to_metric_families(text)
            for s in family.samples
        )
        return cls(text, types, samples)

    def select(self, sample_name: str, /, **labels: str) -> list[Sample]:
        """Samples called `sample_name` whose labels include `labels`."""
        return [
            s
            for s in self.samples
            if s.name == sample_name and all(s.labels.get(k) == v for k, v in labels.items())
        ]

    def total(self, sample_name: str, /, **labels: str) -> float:
        """Sum of the selected samples (0 when there are none)."""
        return sum(s.value for s in self.select(sample_name, **labels))

    def label_names(self, name: str) -> set[str]:
        """Label names on the samples of metric `name` (for a histogram: of its `_count`)."""
        sample_name = f"{name}_count" if self.types.get(name) == "histogram" else name
        found: set[str] = set()
        for sample in self.select(sample_name):
            found |= set(sample.labels)
        return found


class InProcessController:
    """One `kro controller` run on a background thread; see the module docstring."""

    def __init__(self, kubeconfig: Path | str, extra_args: Iterable[str] = ()) -> None:
        self.health_port, self.metrics_port = free_loopback_ports(2)
        self.args: Sequence[str] = [
            f"--kubeconfig={kubeconfig}",
            f"--metrics-bind-address=127.0.0.1:{self.metrics_port}",
            f"--health-probe-bind-address=127.0.0.1:{self.health_port}",
            "--graceful-shutdown-timeout=5s",
            "--zap-encoder=json",
            *extra_args,
        ]
        self._config = parse_controller_args(self.args)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[int] | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name="kro-controller", daemon=True)
        self.error: BaseException | None = None
        self.exit_code: int | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self, timeout_s: float = 30.0) -> InProcessController:
        # Logging is process-wide and the first configuration wins. The console renderer
        # formats tracebacks with rich when it is installed (import-linter pulls it into the dev
        # venv), locals included: over a second of CPU per failed reconcile, under the GIL, which
        # starves this process's probes. JSON logs format tracebacks plainly, so start afresh
        # with those (the controller is run with --zap-encoder=json).
        kro_logging._reset()
        self._thread.start()
        self._ready.wait(timeout_s)
        wait_for(
            lambda: self._check_alive() and self._status("/healthz", self.health_port) == 200,
            timeout_s=timeout_s,
            what="the in-process controller to answer /healthz",
        )
        return self

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            self._task = loop.create_task(run_controller(self._config), name="kro-controller")
            self._ready.set()
            try:
                self.exit_code = loop.run_until_complete(self._task)
            except asyncio.CancelledError:
                pass
            except BaseException as error:
                self.error = error
            finally:
                leftovers = [t for t in asyncio.all_tasks(loop) if not t.done()]
                for task in leftovers:
                    task.cancel()
                if leftovers:
                    loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
                loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            self._ready.set()
            asyncio.set_event_loop(None)
            loop.close()

    def is_running(self) -> bool:
        return self._thread.is_alive()

    def _check_alive(self) -> bool:
        if not self._thread.is_alive():
            raise AssertionError(
                f"the controller stopped (exit code {self.exit_code}): {self.error!r}"
            ) from self.error
        return True

    def stop(self, timeout_s: float = 30.0) -> None:
        loop, task = self._loop, self._task
        if loop is not None and task is not None and self._thread.is_alive():
            with contextlib.suppress(RuntimeError):  # the loop closed in the meantime
                loop.call_soon_threadsafe(task.cancel)
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            raise AssertionError(f"the controller did not stop within {timeout_s}s")

    def __enter__(self) -> InProcessController:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- HTTP ------------------------------------------------------------------------------------

    @staticmethod
    def _get(url: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(url, timeout=_HTTP_TIMEOUT_S) as response:
                return int(response.status), response.read().decode()
        except urllib.error.HTTPError as error:
            return int(error.code), error.read().decode(errors="replace")

    def _status(self, path: str, port: int) -> int | None:
        try:
            return self._get(f"http://127.0.0.1:{port}{path}")[0]
        except (urllib.error.URLError, OSError):
            return None

    def healthz(self) -> int | None:
        """HTTP status of /healthz (None: nothing answered)."""
        return self._status("/healthz", self.health_port)

    def readyz(self) -> int | None:
        return self._status("/readyz", self.health_port)

    def metrics(self) -> Scrape:
        """Scrape /metrics, as Prometheus would."""
        self._check_alive()
        status, body = self._get(f"http://127.0.0.1:{self.metrics_port}/metrics")
        assert status == 200, f"/metrics answered {status}: {body[:300]}"
        return Scrape.parse(body)


async def server_requests(client: Client) -> dict[tuple[str, str], float]:
    """kube-apiserver's count of requests by (verb, resource/subresource). It tells a GET of
    one object from a LIST or a WATCH, which the controller's own client metrics do not."""
    text = await client.request("GET", "/metrics", accept="text/plain")
    found: dict[tuple[str, str], float] = {}
    for sample in Scrape.parse(str(text)).select("apiserver_request_total"):
        key = (
            sample.labels.get("verb", ""),
            sample.labels.get("resource", "") + "/" + sample.labels.get("subresource", ""),
        )
        found[key] = found.get(key, 0) + sample.value
    return found


def requests_since(
    before: dict[tuple[str, str], float], after: dict[tuple[str, str], float]
) -> dict[tuple[str, str], float]:
    """The requests counted between two `server_requests` answers, by (verb, resource)."""
    changed = {k: v - before.get(k, 0) for k, v in after.items()}
    return {k: v for k, v in changed.items() if v}
