"""One `kro controller` process of a run: started as the run's settings say (optionally from
another checkout, or profiled), asked for its own request counts, CPU and memory, and waited
on until its requests stop."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kro.testing.processes import free_port, stop_pid

from .harness import SETTINGS, proc_usage, rss

_LAUNCHER = """
import runpy, sys
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f)]
sys.path.insert(0, sys.argv.pop(1))
sys.argv[0] = "kro"
runpy.run_module("kro.cli.main", run_name="__main__")
"""
"""Runs `kro` from the checkout named by KRO_BENCH_SOURCE (e.g. a `git worktree` of an older
commit), bypassing the editable install, to measure before and after on one machine."""


_PROFILED_LAUNCHER = """
import collections, gc, io, os, pstats, runpy, signal, sys
mode, out, source = sys.argv[1:4]
del sys.argv[1:4]
if source:
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f)]
    sys.path.insert(0, source)
sys.argv[0] = "kro"
if mode == "memory":
    import tracemalloc
    tracemalloc.start(6)

    def report():
        current, peak = tracemalloc.get_traced_memory()
        snapshot = tracemalloc.take_snapshot()
        tracemalloc.stop()  # the analysis below would be traced too, and slowly
        snapshot = snapshot.filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
        lines = [f"traced now {current / 2**20:.1f} MiB, traced peak {peak / 2**20:.1f} MiB"]
        lines.append("-- by file")
        lines += [str(s) for s in snapshot.statistics("filename")[:25]]
        lines.append("-- by line")
        lines += [str(s) for s in snapshot.statistics("lineno")[:40]]
        lines.append("-- by kro line (innermost frame in kro/ that allocated, or called what did)")
        by_kro = collections.Counter()
        for trace in snapshot.traces:
            frame = next(
                (f for f in trace.traceback if "/kro/" in f.filename), trace.traceback[0]
            )
            by_kro[f"{frame.filename}:{frame.lineno}"] += trace.size
        lines += [f"{where}: {size / 2**20:.2f} MiB" for where, size in by_kro.most_common(40)]
        lines.append("-- live objects by type (gc)")
        types = collections.Counter(type(o).__name__ for o in gc.get_objects())
        lines += [f"{name}: {count}" for name, count in types.most_common(25)]
        return "\\n".join(lines)
else:
    import cProfile
    profile = cProfile.Profile()

    def report():
        profile.disable()
        text = io.StringIO()
        stats = pstats.Stats(profile, stream=text)
        stats.sort_stats("cumulative").print_stats(40)
        stats.sort_stats("tottime").print_stats(40)
        stats.print_callers(12)  # who calls the 12 most expensive by self time
        return text.getvalue()

    profile.enable()


def dump(signum, frame):
    with open(out + ".part", "w") as f:
        f.write(report())
    os.replace(out + ".part", out)


signal.signal(signal.SIGUSR1, dump)
runpy.run_module("kro.cli.main", run_name="__main__")
"""
"""`--profile memory|cpu`: the controller runs under tracemalloc (6 frames) or cProfile, and
SIGUSR1 writes the top allocations by file, line and innermost kro line plus live objects by type,
or the top functions by cumulative and self time (and the callers of the costliest), to the file
named on its command line. Both
slow the controller (tracemalloc about twice): profiled runs are for where, not how much."""


def requests_by_method(port: int) -> dict[str, float]:
    """A controller's own API requests so far (its rest_client_requests_total), by method."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("rest_client_requests_total{"):
            method = line.split('method="', 1)[1].split('"', 1)[0]
            found[method] = found.get(method, 0.0) + float(line.rsplit(" ", 1)[1])
    return found


def requests_total(port: int) -> float:
    """A controller's own API requests so far."""
    return sum(requests_by_method(port).values())


@dataclass
class Controller:
    """A running `kro controller`, its metrics served on `port`."""

    process: subprocess.Popen[bytes]
    port: int
    profile_dump: Path | None = field(default=None)

    @classmethod
    def start(
        cls,
        kubeconfig: str,
        workers: int,
        *,
        profile: str | None = None,
        extra_args: Sequence[str] = (),
    ) -> Controller:
        """`kro controller`; with KRO_BENCH_LOG=<path> its debug log (JSON lines) goes there,
        with KRO_BENCH_SOURCE=<checkout> it runs that checkout's kro, with `profile` (memory
        or cpu) under _PROFILED_LAUNCHER; `extra_args` are appended (a Graph's gate and
        flags)."""
        port = free_port()
        dump = Path(tempfile.mkstemp(prefix="kro-profile-")[1]) if profile else None
        log = Path(os.environ["KRO_BENCH_LOG"]) if os.environ.get("KRO_BENCH_LOG") else None
        source = os.environ.get("KRO_BENCH_SOURCE")
        launcher = ["-c", _LAUNCHER, source] if source else ["-m", "kro.cli.main"]
        if profile and dump:
            launcher = ["-c", _PROFILED_LAUNCHER, profile, str(dump), source or ""]
        process = subprocess.Popen(
            [
                sys.executable,
                *launcher,
                "controller",
                f"--kubeconfig={kubeconfig}",
                f"--metrics-bind-address=127.0.0.1:{port}",
                f"--health-probe-bind-address=127.0.0.1:{free_port()}",
                f"--dynamic-controller-concurrent-reconciles={workers}",
                *SETTINGS.client_flags(),
                f"--log-level={'debug' if log else 'warn'}",
                "--zap-encoder=json",
                *extra_args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=log.open("ab") if log else subprocess.DEVNULL,
        )
        return cls(process, port, dump)

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        stop_pid(self.process.pid, reap=self.process.poll)

    def requests(self) -> float:
        return requests_total(self.port)

    def requests_by_method(self) -> dict[str, float]:
        return requests_by_method(self.port)

    def usage(self) -> tuple[float, int]:
        """(CPU seconds, peak RSS bytes) so far."""
        return proc_usage(self.process.pid)

    async def wait_up(self, poll_s: float) -> float:
        """Seconds until its metrics endpoint answers (it is up)."""
        started = time.monotonic()
        while True:
            try:
                self.requests()
                return time.monotonic() - started
            except OSError:
                await asyncio.sleep(poll_s)

    async def startup_usage(self) -> dict[str, float]:
        """CPU and RSS once it serves /metrics and has listed (nothing to reconcile yet)."""
        up_s = await self.wait_up(0.05)
        await asyncio.sleep(2.0)  # its informers list and the first pass finds nothing
        cpu, _ = self.usage()
        return {
            "startup_up_s": up_s,
            "startup_cpu_s": cpu,
            "startup_rss_mib": rss(self.process.pid) / 2**20,
        }

    async def profile_report(self) -> str | None:
        """With a profile: ask the controller (SIGUSR1) for its report; None without."""
        if self.profile_dump is None:
            return None
        self.process.send_signal(signal.SIGUSR1)
        for _ in range(2400):  # a snapshot of a large heap takes minutes to sort
            await asyncio.sleep(0.5)
            if text := _take_report(self.profile_dump):
                return text
        return "(no report from the controller)"

    async def quiet(self, quiet_s: float, limit_s: float) -> float:
        """Seconds (from now) until its request count last moved, once it has not moved for
        `quiet_s` (or `limit_s` passed)."""
        started = time.monotonic()
        last, last_change = self.requests(), started
        while time.monotonic() - last_change < quiet_s and time.monotonic() - started < limit_s:
            await asyncio.sleep(0.25)
            now = self.requests()
            if now != last:
                last, last_change = now, time.monotonic()
        return last_change - started

    async def quiet_patient(self, quiet_s: float, limit_s: float) -> float:
        """`quiet` for a controller whose event loop may be busy for seconds at a time (a pass
        over hundreds of objects): an unanswered scrape counts as activity, not an error."""
        started = time.monotonic()
        last, last_change = -1.0, started
        while time.monotonic() - last_change < quiet_s and time.monotonic() - started < limit_s:
            await asyncio.sleep(0.25)
            try:
                now = await asyncio.to_thread(requests_total, self.port)
            except OSError:  # timed out (TimeoutError is an OSError): busy
                now = -1.0
            if now < 0 or now != last:
                last, last_change = now, time.monotonic()
        return last_change - started


def _take_report(dump: Path) -> str:
    """The report once the controller has renamed it into place (empty until then)."""
    text = dump.read_text()
    if text:
        dump.unlink()
    return text


@dataclass
class Responsiveness:
    """The longest the controller took to answer a /metrics scrape while a phase ran, probed
    every half second from a thread: how long its event loop went without serving anything
    else (health probes, watch events, other Graphs)."""

    port: int
    slowest_s: float = 0.0

    def _probe(self) -> None:
        asked = time.monotonic()
        with contextlib.suppress(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=120).close()
        self.slowest_s = max(self.slowest_s, time.monotonic() - asked)

    async def run(self) -> None:
        while True:
            await asyncio.to_thread(self._probe)
            await asyncio.sleep(0.5)
