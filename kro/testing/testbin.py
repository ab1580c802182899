"""kro.testing.testbin: build the control-plane binaries from the committed wrapper Go modules.

Why wrapper modules: `k8s.io/kubernetes` and etcd's server module carry `replace` directives, so
`go install pkg@version` cannot build them (replace directives apply only in a main module). Each
wrapper under `gomod/` is a main module that pins one tool and commits its go.sum.

Binaries are cached outside the repository, one directory per component keyed by everything that
went into them (go.mod, go.sum, Go version, ldflags, tags), written into a temporary directory and
renamed into place so that an interrupted build never leaves a half entry; a `.complete` stamp is
written last. A file lock serialises concurrent builds (two pytest runs, CI and a developer); its
holder records what it builds and how far it got (kro.testing.lockfile), and whoever waits prints
that at least every 10 s, as the builder prints its own progress (kro.testing.progress).

Optional components (promtool, for the chart's alert rules) are built only when asked for by
name: `ensure()` with no names, `make testbin` and the cluster never build them.

    python -m kro.testing.testbin ensure            # build what is missing, print the paths
    python -m kro.testing.testbin path kube-apiserver
    python -m kro.testing.testbin ensure promtool   # an optional component

Overrides, as envtest has them: TEST_ASSET_<NAME> (e.g. TEST_ASSET_KUBE_APISERVER) names one
binary; KUBEBUILDER_ASSETS names a directory holding some of them.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kro.testing import progress
from kro.testing.binarycache import cache_root as cache_root  # noqa: PLC0414 (re-exported)
from kro.testing.lockfile import Holder, LockFile

GOMOD_DIR = Path(__file__).resolve().parent / "gomod"

_K8S_VERSION = "v1.36.3"
_VERSION_PKG = "k8s.io/component-base/version"
_CLIENT_VERSION_PKG = "k8s.io/client-go/pkg/version"
_K8S_LDFLAGS = " ".join(
    [
        "-s -w",
        f"-X {_VERSION_PKG}.gitVersion={_K8S_VERSION}",
        f"-X {_VERSION_PKG}.gitMajor=1",
        f"-X {_VERSION_PKG}.gitMinor=36",
        f"-X {_VERSION_PKG}.gitTreeState=clean",
        f"-X {_VERSION_PKG}.buildDate=1970-01-01T00:00:00Z",
        f"-X {_CLIENT_VERSION_PKG}.gitVersion={_K8S_VERSION}",
        f"-X {_CLIENT_VERSION_PKG}.gitMajor=1",
        f"-X {_CLIENT_VERSION_PKG}.gitMinor=36",
    ]
)


@dataclass(frozen=True, slots=True)
class Component:
    """One `go build` invocation: a wrapper module and the binaries it produces.

    binaries maps the executable name to its Go main package. optional: built only when one of
    its binaries is asked for by name (never by `make testbin` or the cluster).
    """

    name: str
    version: str
    module_dir: str
    binaries: tuple[tuple[str, str], ...]
    ldflags: str = "-s -w"
    tags: str = ""
    optional: bool = False

    @property
    def directory(self) -> Path:
        return GOMOD_DIR / self.module_dir


# helm first: it is small, and the chart unit tests wait for it while the rest builds.
COMPONENTS: tuple[Component, ...] = (
    Component(
        name="helm",
        version="v3.22.0",
        module_dir="helm",
        binaries=(("helm", "helm.sh/helm/v3/cmd/helm"),),
    ),
    Component(
        name="kubernetes",
        version=_K8S_VERSION,
        module_dir="k8s",
        binaries=(
            ("kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver"),
            ("kube-controller-manager", "k8s.io/kubernetes/cmd/kube-controller-manager"),
            ("kube-scheduler", "k8s.io/kubernetes/cmd/kube-scheduler"),
            ("kubectl", "k8s.io/kubernetes/cmd/kubectl"),
        ),
        ldflags=_K8S_LDFLAGS,
        tags="selinux,notest,grpcnotrace",
    ),
    Component(
        name="etcd",
        version="v3.6.16",
        module_dir="etcd",
        binaries=(("etcd", "go.etcd.io/etcd/server/v3"),),
    ),
    Component(
        name="kwok",
        version="v0.8.0",
        module_dir="kwok",
        binaries=(("kwok", "sigs.k8s.io/kwok/cmd/kwok"),),
        ldflags="-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=0.8.0",
    ),
    # Checks the chart's PrometheusRule (tests/charts/test_dashboards.py). remove_all_sd leaves
    # out the cloud service-discovery plugins, which promtool's rule checks never use.
    Component(
        name="promtool",
        version="v0.316.0",
        module_dir="promtool",
        binaries=(("promtool", "github.com/prometheus/prometheus/cmd/promtool"),),
        tags="remove_all_sd",
        optional=True,
    ),
)

BINARY_NAMES: tuple[str, ...] = tuple(
    b for c in COMPONENTS if not c.optional for b, _ in c.binaries
)
"""What `ensure()` builds by default: everything but the optional components."""
ALL_BINARY_NAMES: tuple[str, ...] = tuple(b for c in COMPONENTS for b, _ in c.binaries)


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({"GOTOOLCHAIN": "local", "CGO_ENABLED": "0", "GOFLAGS": "-modcacherw"})
    return env


def go_version() -> str:
    out = subprocess.run(
        ["go", "env", "GOVERSION"], capture_output=True, text=True, check=True, env=_go_env()
    )
    return out.stdout.strip()


def cache_key(component: Component, go: str) -> str:
    """Directory name for a component: changes whenever anything that built it changes."""
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum"):
        digest.update((component.directory / name).read_bytes())
    digest.update(component.ldflags.encode())
    digest.update(component.tags.encode())
    digest.update(" ".join(p for _, p in component.binaries).encode())
    return f"{component.name}-{component.version}-{go}-linux-amd64-{digest.hexdigest()[:12]}"


def _override(binary: str) -> Path | None:
    explicit = os.environ.get("TEST_ASSET_" + binary.upper().replace("-", "_"))
    if explicit:
        return Path(explicit)
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if assets and (Path(assets) / binary).is_file():
        return Path(assets) / binary
    return None


class _Progress:
    """Prints a heartbeat while `go build -v` runs (packages compiled, the last one, the time),
    every kro.testing.progress.interval_s(), and copies the figure into the build lock's record
    for whoever waits on that lock. A thread, because one package can take minutes to compile
    and the main thread is blocked reading the compiler's output meanwhile."""

    def __init__(self, label: str, lock: LockFile | None = None) -> None:
        self.label = label
        self.lock = lock
        self.interval_s = progress.interval_s()
        self.packages = 0
        self.last_package = ""
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True, name="testbin-progress")

    def __enter__(self) -> _Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def compiled(self, package: str) -> None:
        self.packages += 1
        self.last_package = package

    def elapsed(self) -> str:
        return progress.format_duration(time.monotonic() - self.started)

    def _beat(self) -> None:
        while not self._stop.wait(self.interval_s):
            figure = f"{self.packages} packages compiled"
            last = f" (last {self.last_package})" if self.last_package else ""
            _say(f"{self.label}: {figure}{last}, {self.elapsed()} elapsed")
            if self.lock is not None and self.lock.is_held:
                self.lock.update(progress=figure)


def _say(message: str) -> None:
    print(f"[testbin] {message}", file=sys.stderr, flush=True)


def build(component: Component, destination: Path, lock: LockFile | None = None) -> None:
    """Run `go build` for one component into `destination` (which must exist)."""
    command = ["go", "build", "-v", "-trimpath", f"-ldflags={component.ldflags}"]
    if component.tags:
        command.append(f"-tags={component.tags}")
    if len(component.binaries) == 1:
        name, package = component.binaries[0]
        command += ["-o", str(destination / name), package]
    else:
        command += ["-o", str(destination) + "/", *(p for _, p in component.binaries)]
    label = f"{component.name} {component.version}"
    _say(f"building {label} ({', '.join(b for b, _ in component.binaries)})")
    tail: list[str] = []
    with _Progress(label, lock) as beat:
        proc = subprocess.Popen(
            command,
            cwd=component.directory,
            env=_go_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            beat.compiled(line.strip())
            tail = [*tail[-40:], line.rstrip()]
        code = proc.wait()
    if code != 0:
        raise RuntimeError(f"go build of {label} failed (exit {code}):\n" + "\n".join(tail))
    _say(f"built {label} in {beat.elapsed()}")


def build_lock() -> LockFile:
    """The lock every build on this machine takes (one cache, one build at a time)."""
    return LockFile(cache_root() / ".lock")


def _waiting_for(component: Component, lock: LockFile) -> Callable[[Holder | None, float], None]:
    def say(holder: Holder | None, waited_s: float) -> None:
        if holder is None or not holder.alive:
            who = "another process (it has not said what it is doing)"
        else:
            who = holder.describe()
        _say(
            f"{component.name}: waiting {progress.format_duration(waited_s)} for the build "
            f"lock {lock.path}, held by {who}"
        )

    return say


def _command_line() -> str:
    argv = [Path(sys.argv[0]).name if sys.argv else "python", *sys.argv[1:]]
    text = " ".join(argv)
    return text if len(text) <= 80 else text[:77] + "..."


def ensure_component(component: Component) -> Path:
    """Return the cache directory holding the component's binaries, building it on a miss."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    final = root / cache_key(component, go_version())
    if (final / ".complete").is_file():
        return final
    lock = build_lock()
    lock.acquire(
        f"building {component.name} {component.version}",
        waiting=_waiting_for(component, lock),
        command=f"run by `{_command_line()}`",
    )
    try:
        if (final / ".complete").is_file():  # another process built it while we waited
            return final
        staging = root / f".tmp-{final.name}-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        try:
            build(component, staging, lock)
            (staging / ".complete").write_text(component.version + "\n")
            shutil.rmtree(final, ignore_errors=True)
            os.rename(staging, final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    finally:
        lock.release()
    return final


def ensure(names: Iterable[str] = BINARY_NAMES) -> dict[str, Path]:
    """Paths to the named binaries, building the components that hold them when needed."""
    wanted = list(names)
    paths: dict[str, Path] = {}
    for binary in wanted:
        found = _override(binary)
        if found is not None:
            paths[binary] = found
    for component in COMPONENTS:
        needed = [b for b, _ in component.binaries if b in wanted and b not in paths]
        if not needed:
            continue
        directory = ensure_component(component)
        for binary in needed:
            paths[binary] = directory / binary
    unknown = set(wanted) - set(paths)
    if unknown:
        raise KeyError(f"unknown control-plane binaries: {sorted(unknown)}")
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kro.testing.testbin", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    ensure_cmd = sub.add_parser("ensure", help="build missing binaries and print their paths")
    ensure_cmd.add_argument("binaries", nargs="*", default=list(BINARY_NAMES))
    path_cmd = sub.add_parser("path", help="print the path of one binary (building it if needed)")
    path_cmd.add_argument("binary", choices=ALL_BINARY_NAMES)
    args = parser.parse_args(argv)
    started = time.monotonic()
    if args.command == "path":
        print(ensure([args.binary])[args.binary])
        return 0
    for name, path in ensure(args.binaries).items():
        print(f"{name}\t{path}")
    _say(f"all binaries ready in {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
