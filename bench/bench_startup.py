"""Start-up: memory and CPU of `kro controller` before any RGD exists, and what its imports cost.

For each run it starts a real `kro controller` process against a local control plane (kro's CRDs
installed, no RGD), waits until /readyz answers 200 (informers listed and synced) and then until
the process has used no CPU for a second (its first passes over an empty cluster are done), and
reads from /proc: VmRSS and VmHWM (`/proc/<pid>/status`) and user+sys CPU seconds
(`/proc/<pid>/stat`). kro's bytecode is compiled first, as `pip install` leaves it in the image:
a checkout run with PYTHONDONTWRITEBYTECODE=1 compiles ~160 modules from source at every start,
~0.4 s of CPU that no deployment pays. Five more runs under `python -X importtime` list the
modules the controller really imported by then, summed per top-level package (self time, so
nothing counts twice; the least of the five, since other work on the machine only adds time).
Upstream kro (Go) starts in about 55 MiB and 0.25-0.3 s of CPU: the targets here.

    python bench/bench_startup.py                   # its own control plane, 3 runs
    python bench/bench_startup.py --runs 5 --kubeconfig "$KUBECONFIG"
    python bench/bench_startup.py --source ../kro-before --output startup-before.json
    python bench/bench_startup.py --hide rich --output startup-no-rich.json

`--hide rich` starts the controller as in the image: the dev environment has rich installed (a
test tool's dependency, not kro's), and structlog imports it when it can (~3 MiB, 50 modules).
The hidden package is shadowed by a module that raises ImportError, as an absent one would.
`--source DIR` runs the kro package of another checkout (e.g. a `git worktree` of an older
commit), to measure before and after on one machine. Results go to bench/results/startup.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import defaultdict
from pathlib import Path
from typing import Any

import kro
from kro.api.crds import kro_crds
from kro.controllers.crd import CRDS, wait_established
from kro.runtime.client import Client
from kro.runtime.errors import AlreadyExists
from kro.testing.cluster import ClusterOptions, LocalCluster
from kro.testing.processes import die_with_parent, free_port, stop_pid

RESULTS = Path(__file__).resolve().parent / "results"
READY_TIMEOUT_S = 60.0
IDLE_S = 1.0
"""The process counts as started once /readyz is 200 and its CPU time stands still this long."""
IDLE_LIMIT_S = 15.0
IMPORTTIME_RUNS = 5

_LAUNCHER = """
import runpy, sys
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f)]
sys.path.insert(0, sys.argv.pop(1))
sys.argv[0] = "kro"
runpy.run_module("kro.cli.main", run_name="__main__")
"""
"""Runs `kro` from the checkout given with --source, bypassing the editable install."""


def _environment(hidden: Path | None) -> dict[str, str]:
    """The child's environment; `hidden` (a directory of ImportError stubs) goes first on its
    path."""
    env = dict(os.environ)
    if hidden is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(hidden), env.get("PYTHONPATH")]))
    return env


def hide_packages(names: list[str], directory: Path) -> Path | None:
    if not names:
        return None
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / f"{name}.py").write_text(
            f"raise ImportError({name!r} + ' is hidden by bench_startup --hide')\n"
        )
    return directory


def _argv(kubeconfig: str, health_port: int, source: str | None, importtime: bool) -> list[str]:
    launcher = ["-c", _LAUNCHER, source] if source else ["-m", "kro.cli.main"]
    return [
        sys.executable,
        *(["-X", "importtime"] if importtime else []),
        *launcher,
        "controller",
        f"--kubeconfig={kubeconfig}",
        f"--metrics-bind-address=127.0.0.1:{free_port()}",
        f"--health-probe-bind-address=127.0.0.1:{health_port}",
        "--zap-encoder=json",
    ]


def _cpu_seconds(pid: int) -> float:
    """user + sys CPU seconds of a running process, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _memory_mib(pid: int) -> dict[str, float]:
    """VmRSS (resident now) and VmHWM (peak resident) in MiB, from /proc/<pid>/status."""
    found: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0]) / 1024
    return found


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as response:
            return int(response.status) == 200
    except (urllib.error.URLError, OSError):
        return False


def _wait(process: subprocess.Popen[bytes], probe: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"kro controller exited ({process.returncode}) before {what}")
        if probe():
            return
        time.sleep(0.02)
    raise RuntimeError(f"kro controller: no {what} within {timeout_s}s")


def _wait_idle(pid: int) -> None:
    """Until the process's CPU time has not moved for IDLE_S (at most IDLE_LIMIT_S)."""
    started = time.monotonic()
    last, since = _cpu_seconds(pid), time.monotonic()
    while time.monotonic() - since < IDLE_S and time.monotonic() - started < IDLE_LIMIT_S:
        time.sleep(0.1)
        now = _cpu_seconds(pid)
        if now != last:
            last, since = now, time.monotonic()


def measure_once(
    kubeconfig: str, source: str | None, log: Path, hidden: Path | None
) -> dict[str, float]:
    """One controller process: seconds to ready, CPU seconds and memory once idle."""
    health = free_port()
    started = time.monotonic()
    with log.open("ab") as out:
        process = subprocess.Popen(
            _argv(kubeconfig, health, source, importtime=False),
            stdout=out,
            stderr=out,
            preexec_fn=die_with_parent,  # noqa: PLW1509 (prctl only)
            env=_environment(hidden),
        )
    try:
        _wait(process, lambda: _ready(health), READY_TIMEOUT_S, "200 from /readyz")
        ready_s = time.monotonic() - started
        cpu_at_ready = _cpu_seconds(process.pid)
        _wait_idle(process.pid)
        return {
            "ready_s": ready_s,
            "cpu_at_ready_s": cpu_at_ready,
            "cpu_s": _cpu_seconds(process.pid),
            **{f"{k.lower()}_mib": v for k, v in _memory_mib(process.pid).items()},
        }
    finally:
        stop_pid(process.pid, reap=process.poll)


def importtime_lines(
    kubeconfig: str, source: str | None, log: Path, hidden: Path | None
) -> list[str]:
    """One controller run under `-X importtime`, until ready and idle: its report lines."""
    health = free_port()
    with log.open("wb") as err:
        process = subprocess.Popen(
            _argv(kubeconfig, health, source, importtime=True),
            stdout=subprocess.DEVNULL,
            stderr=err,
            preexec_fn=die_with_parent,  # noqa: PLW1509 (prctl only)
            env=_environment(hidden),
        )
        try:
            _wait(process, lambda: _ready(health), READY_TIMEOUT_S, "200 from /readyz")
            _wait_idle(process.pid)
        finally:
            stop_pid(process.pid, reap=process.poll)
    return [
        line
        for line in log.read_text(errors="replace").splitlines()
        if line.startswith("import time:") and "self [us]" not in line
    ]


def import_profile(runs: list[list[str]]) -> dict[str, Any]:
    """Self time per top-level package, module counts, and the slowest modules including their
    imports: the least over the runs, since other work on the machine only ever adds time."""
    own: dict[str, list[float]] = defaultdict(list)
    total: dict[str, list[float]] = defaultdict(list)
    modules: dict[str, int] = defaultdict(int)
    for index, lines in enumerate(runs):
        per_package: dict[str, float] = defaultdict(float)
        for line in lines:
            self_us, cumulative_us, name = line[len("import time:") :].split("|")
            module = name.strip()
            top = module.split(".")[0]
            per_package[top] += int(self_us) / 1e6
            total[module].append(int(cumulative_us) / 1e6)
            if index == 0:
                modules[top] += 1
        for top, seconds in per_package.items():
            own[top].append(seconds)
    least = {top: min(values) for top, values in own.items()}
    packages = sorted(least.items(), key=lambda kv: -kv[1])
    slowest = sorted(((min(v), m) for m, v in total.items()), reverse=True)
    return {
        "runs": len(runs),
        "modules": sum(modules.values()),
        "self_s_total": round(sum(least.values()), 3),
        "packages": [
            {"package": p, "self_s": round(s, 4), "modules": modules[p]} for p, s in packages[:25]
        ],
        "slowest_cumulative": [{"module": m, "cumulative_s": round(t, 4)} for t, m in slowest[:15]],
    }


async def install_crds(kubeconfig: str) -> None:
    async with await Client.from_kubeconfig(kubeconfig) as client:
        for crd in kro_crds():
            with contextlib.suppress(AlreadyExists):
                await client.create(CRDS, crd)
            await wait_established(client, crd["metadata"]["name"])


def compile_bytecode(source: str | None) -> None:
    """kro's .pyc files next to its sources, as `pip install` leaves them in the image."""
    package = Path(source, "kro") if source else Path(kro.__file__).parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)


def run(
    kubeconfig: str,
    runs: int,
    source: str | None,
    logs: Path,
    *,
    hide: list[str],
    label: str | None = None,
) -> dict[str, Any]:
    load = os.getloadavg()[0]  # other work on the machine inflates CPU seconds too
    compile_bytecode(source)
    asyncio.run(install_crds(kubeconfig))
    hidden = hide_packages(hide, logs / "hidden")
    samples = [measure_once(kubeconfig, source, logs / f"run-{i}.log", hidden) for i in range(runs)]
    imports = import_profile(
        [
            importtime_lines(kubeconfig, source, logs / f"importtime-{i}.log", hidden)
            for i in range(IMPORTTIME_RUNS)
        ]
    )

    def median(key: str) -> float:
        return round(statistics.median(s[key] for s in samples), 3)

    return {
        "load_average_1m": load,
        "runs": runs,
        "source": label or ("another checkout (--source)" if source else "this checkout"),
        "hidden": hide,
        "median": {k: median(k) for k in samples[0]},
        "min": {k: round(min(s[k] for s in samples), 3) for k in samples[0]},
        "samples": [{k: round(v, 3) for k, v in s.items()} for s in samples],
        "imports": imports,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    parser.add_argument("--source", default=os.environ.get("KRO_BENCH_SOURCE"))
    parser.add_argument("--hide", action="append", default=[], help="a package to hide (rich)")
    parser.add_argument("--label", help="what --source is, for the results (e.g. a commit)")
    parser.add_argument("--output", default="startup.json", help="file name under bench/results")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kro-bench-startup-") as tmp:
        logs = Path(tmp)
        if args.kubeconfig:
            result = run(
                args.kubeconfig, args.runs, args.source, logs, hide=args.hide, label=args.label
            )
        else:
            with LocalCluster(logs / "cluster", ClusterOptions(nodes=0)) as state:
                result = run(
                    str(state.kubeconfig),
                    args.runs,
                    args.source,
                    logs,
                    hide=args.hide,
                    label=args.label,
                )
    median, least = result["median"], result["min"]
    print(
        f"kro controller, median of {args.runs}: ready in {median['ready_s']:.2f} s, "
        f"CPU {median['cpu_s']:.2f} s (least {least['cpu_s']:.2f} s; "
        f"{median['cpu_at_ready_s']:.2f} s at ready), "
        f"RSS {median['vmrss_mib']:.1f} MiB (peak {median['vmhwm_mib']:.1f} MiB), "
        f"load average {result['load_average_1m']:.2f}"
    )
    imports = result["imports"]
    print(f"imports: {imports['modules']} modules, {imports['self_s_total']:.2f} s (importtime)")
    for row in imports["packages"][:12]:
        print(f"  {row['package']:<24} {row['self_s']:.3f} s  {row['modules']:>4} modules")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / args.output).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
