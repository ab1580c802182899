"""kro.testing.testbin: build the control-plane binaries from the committed wrapper Go modules.

Why wrapper modules: `k8s.io/kubernetes` and etcd's server module carry `replace` directives, so
`go install pkg@version` cannot build them (replace directives apply only in a main module). Each
wrapper under `gomod/` is a main module that pins one tool and commits its go.sum.

Binaries are cached outside the repository, one directory per component keyed by everything that
went into them (go.mod, go.sum, Go version, ldflags, tags), written into a temporary directory and
renamed into place so that an interrupted build never leaves a half entry; a `.complete` stamp is
written last. A file lock serialises concurrent builds (two pytest runs, CI and a developer).

    python -m kro.testing.testbin ensure            # build what is missing, print the paths
    python -m kro.testing.testbin path kube-apiserver

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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

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

    binaries maps the executable name to its Go main package.
    """

    name: str
    version: str
    module_dir: str
    binaries: tuple[tuple[str, str], ...]
    ldflags: str = "-s -w"
    tags: str = ""

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
)

BINARY_NAMES: tuple[str, ...] = tuple(b for c in COMPONENTS for b, _ in c.binaries)


def cache_root() -> Path:
    """Where built binaries live: $KRO_TESTBIN_CACHE or ~/.cache/kro-testbin."""
    override = os.environ.get("KRO_TESTBIN_CACHE")
    return Path(override) if override else Path.home() / ".cache" / "kro-testbin"


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
    """Prints a heartbeat while `go build -v` runs: packages compiled so far and elapsed time."""

    def __init__(self, label: str, interval_s: float = 30.0) -> None:
        self.label = label
        self.interval_s = interval_s
        self.packages = 0
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def __enter__(self) -> _Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def elapsed(self) -> str:
        seconds = int(time.monotonic() - self.started)
        return f"{seconds // 60}m{seconds % 60:02d}s"

    def _beat(self) -> None:
        while not self._stop.wait(self.interval_s):
            _say(f"{self.label}: {self.packages} packages compiled, {self.elapsed()} elapsed")


def _say(message: str) -> None:
    print(f"[testbin] {message}", file=sys.stderr, flush=True)


def build(component: Component, destination: Path) -> None:
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
    with _Progress(label) as progress:
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
            progress.packages += 1
            tail = [*tail[-40:], line.rstrip()]
        code = proc.wait()
    if code != 0:
        raise RuntimeError(f"go build of {label} failed (exit {code}):\n" + "\n".join(tail))
    _say(f"built {label} in {progress.elapsed()}")


def ensure_component(component: Component) -> Path:
    """Return the cache directory holding the component's binaries, building it on a miss."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    final = root / cache_key(component, go_version())
    if (final / ".complete").is_file():
        return final
    with FileLock(str(root / ".lock")):
        if (final / ".complete").is_file():  # another process built it while we waited
            return final
        staging = root / f".tmp-{final.name}-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        try:
            build(component, staging)
            (staging / ".complete").write_text(component.version + "\n")
            shutil.rmtree(final, ignore_errors=True)
            os.rename(staging, final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
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
    path_cmd.add_argument("binary", choices=BINARY_NAMES)
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
