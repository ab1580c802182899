"""tools.image: build the controller image with podman, and run it as the chart would.

    python -m tools.image build   # `make image`
    python -m tools.image test    # `make image-test`: build (cached), then run it

`build` needs a base image with Python 3.11 on Debian 12. Where no registry serves the official
python image, it makes one: debootstrap installs Debian 12 (bookworm) with Debian's python3 and
python3-venv from Debian's packages, the root filesystem is tarred into the cache (default
~/.cache/kro-image, or $KRO_IMAGE_CACHE) and imported into podman as `kro-python-base:bookworm`,
which goes to the Dockerfile as its PYTHON_IMAGE build argument. Both the tarball and the
imported image are reused afterwards. The build itself is `podman build --isolation=chroot`,
which needs no container runtime.

`test` does not use `podman run` (in a sandbox crun may be unable to set rlimits). It renders
the chart's Deployment (`helm template`, helm from kro.testing.testbin), mounts the image
read-only (`podman image mount`) and runs the container's command (the chart's, which is the
image's entrypoint) with the image's environment plus the chart's, in a chroot of its own mount
namespace, as the Deployment asks: its runAsUser/runAsGroup (1000) with no supplementary groups,
no capabilities, no_new_privs, a read-only root filesystem, a tmpfs for each emptyDir (/tmp),
and the kubeconfig mounted read-only under /run/secrets/kro. The process shares the host's
network namespace, so it reaches a fresh local control plane on 127.0.0.1. The test installs
kro's CRDs, applies examples/nginxapp (the RGD, then the instance) and waits until the instance
is ACTIVE.

Both commands print a line starting with SKIP and exit 0 where they cannot run: not root, no
podman, or no debootstrap when the base image has to be made.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = REPO / "Dockerfile"
EXAMPLE = REPO / "examples" / "nginxapp"
CHART = REPO / "charts" / "kro"
CHART_CRDS = CHART / "crds"

SUITE = "bookworm"
BASE_PACKAGES = ("python3", "python3-venv")
BASE_IMAGE = f"localhost/kro-python-base:{SUITE}"
IMAGE_REPOSITORY = "localhost/kro"
# Where the chart's pod would find its credentials; here a read-only bind mount of a kubeconfig.
SECRETS_IN_IMAGE = "/run/secrets/kro"
# The namespace the chart is installed in; the controller's leader-election Lease goes there.
RELEASE_NAMESPACE = "kro-system"
FIELD_MANAGER = "kro-image-test"
CRDS_API = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
RGDS_API = "/apis/kro.run/v1alpha1/resourcegraphdefinitions"

# Slim the base like Debian's own container images: no manuals, docs or translations, now or
# for packages installed later in the builder stage (copyright files stay).
DPKG_EXCLUDES = """\
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
"""


def _say(message: str) -> None:
    print(f"==> {message}", flush=True)


class Skip(Exception):
    """This machine cannot build or run the image; the message says why."""


class ImageError(RuntimeError):
    """A step failed; the message says which, with the tool's output."""


def cache_dir() -> Path:
    override = os.environ.get("KRO_IMAGE_CACHE")
    return Path(override) if override else Path.home() / ".cache" / "kro-image"


def base_tarball() -> Path:
    return cache_dir() / f"debian-{SUITE}-python3-rootfs.tar"


def mirror() -> str:
    return os.environ.get("KRO_DEBIAN_MIRROR", "http://deb.debian.org/debian")


def image_tag() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{IMAGE_REPOSITORY}:{version('kro')}"
    except PackageNotFoundError:
        return f"{IMAGE_REPOSITORY}:dev"


# -- prerequisites -------------------------------------------------------------------------------


def check_prerequisites(base_available: Callable[[], bool]) -> None:
    """Raise Skip when this machine cannot build or run the image.

    `base_available` says whether the base image is in podman or its tarball cached; it is
    asked only once podman is known to work, and debootstrap is needed only when it is not.
    """
    if os.geteuid() != 0:
        raise Skip(
            "not root: podman build --isolation=chroot, debootstrap, mounts and chroot need root"
        )
    if shutil.which("podman") is None:
        raise Skip("podman is not installed (Debian: apt-get install podman)")
    for tool in ("unshare", "chroot", "mount", "tar"):
        if shutil.which(tool) is None:
            raise Skip(f"{tool} is not installed")
    if shutil.which("debootstrap") is None and not base_available():
        raise Skip(
            f"debootstrap is not installed (Debian: apt-get install debootstrap), and the base "
            f"image {BASE_IMAGE} is neither in podman nor cached as {base_tarball()}"
        )


def _run(argv: Sequence[str], *, what: str, capture: bool = False) -> str:
    """Run a tool; output goes to the terminal unless captured. Failure raises ImageError."""
    result = subprocess.run(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if capture else None,
        stderr=subprocess.PIPE if capture else None,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        detail = (result.stderr or "").strip()[-2000:] if capture else "see the output above"
        raise ImageError(f"{what} failed (exit {result.returncode}): {detail}")
    return result.stdout or ""


def image_exists(name: str) -> bool:
    return (
        subprocess.run(
            ["podman", "image", "exists", name], stdin=subprocess.DEVNULL, check=False
        ).returncode
        == 0
    )


def inspect(name: str) -> dict[str, Any]:
    out = _run(
        ["podman", "image", "inspect", name], what=f"podman image inspect {name}", capture=True
    )
    found = json.loads(out)
    return dict(found[0])


# -- the base image ------------------------------------------------------------------------------


def _mounts_under(path: Path) -> list[str]:
    """Mount points below `path` (a failed debootstrap can leave /proc and /sys mounted)."""
    prefix = str(path.resolve()) + "/"
    points = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        point = line.split()[1].replace("\\040", " ")
        if point.startswith(prefix):
            points.append(point)
    return sorted(points, key=len, reverse=True)


def _remove_tree(path: Path) -> None:
    for point in _mounts_under(path):
        subprocess.run(["umount", "--lazy", point], check=False)
    shutil.rmtree(path, ignore_errors=True)


def slim_rootfs(root: Path) -> None:
    """Drop package caches, apt lists, logs, docs and manuals; keep dpkg from adding more."""
    (root / "etc/dpkg/dpkg.cfg.d").mkdir(parents=True, exist_ok=True)
    (root / "etc/dpkg/dpkg.cfg.d/excludes").write_text(DPKG_EXCLUDES)
    for pattern in (
        "var/cache/apt/archives/*.deb",
        "var/cache/apt/*.bin",
        "var/lib/apt/lists/*",
        "var/log/*.log",
        "var/log/apt/*",
    ):
        for path in root.glob(pattern):
            if path.is_file() or path.is_symlink():
                path.unlink()
    for directory in ("usr/share/man", "usr/share/info", "usr/share/groff", "usr/share/lintian"):
        shutil.rmtree(root / directory, ignore_errors=True)
    for path in (root / "usr/share/locale").glob("*"):
        if path.name != "locale.alias":
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink()
    for package in (root / "usr/share/doc").glob("*"):
        if package.is_dir() and not package.is_symlink():
            for item in package.iterdir():
                if item.name != "copyright":
                    is_dir = item.is_dir() and not item.is_symlink()
                    shutil.rmtree(item) if is_dir else item.unlink()


def make_base_tarball(tarball: Path) -> None:
    """debootstrap Debian 12 with python3 and python3-venv, slim it, tar it (numeric owners)."""
    tarball.parent.mkdir(parents=True, exist_ok=True)
    root = tarball.parent / "rootfs.tmp"
    _remove_tree(root)
    _say(
        f"debootstrap {SUITE} (minbase + {', '.join(BASE_PACKAGES)}) from {mirror()} "
        f"into {root}: several minutes"
    )
    started = time.monotonic()
    try:
        _run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(BASE_PACKAGES)}",
                SUITE,
                str(root),
                mirror(),
            ],
            what="debootstrap",
        )
        slim_rootfs(root)
        partial = tarball.with_suffix(".partial")
        _run(
            ["tar", "--numeric-owner", "-C", str(root), "-cf", str(partial), "."],
            what="tar of the base root filesystem",
        )
        partial.replace(tarball)
    finally:
        _remove_tree(root)
    _say(
        f"base root filesystem: {tarball} ({tarball.stat().st_size / 1e6:.0f} MB, "
        f"{time.monotonic() - started:.0f} s)"
    )


def ensure_base() -> str:
    """The base image in podman: imported from the cached tarball, made first if needed."""
    if image_exists(BASE_IMAGE):
        _say(f"base image {BASE_IMAGE}: present")
        return BASE_IMAGE
    tarball = base_tarball()
    if not tarball.exists():
        make_base_tarball(tarball)
    _say(f"podman import {tarball} as {BASE_IMAGE}")
    _run(
        [
            "podman",
            "import",
            "--change",
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "--change",
            "ENV LANG=C.UTF-8",
            "--change",
            'CMD ["/bin/bash"]',
            "--message",
            f"Debian {SUITE} minbase with {' '.join(BASE_PACKAGES)} (debootstrap)",
            str(tarball),
            BASE_IMAGE,
        ],
        what="podman import",
    )
    return BASE_IMAGE


# -- the kro image -------------------------------------------------------------------------------


def pip_conf(env: Mapping[str, str]) -> tuple[str, Path | None] | None:
    """A pip.conf carrying the host's pip index and CA bundle into the build, if any is set.

    Behind a TLS-inspecting proxy or with a private index, the builder's `pip wheel` needs the
    same settings as pip on the host. They are taken from the environment (PIP_INDEX_URL,
    PIP_EXTRA_INDEX_URL, PIP_TRUSTED_HOST, PIP_DEFAULT_TIMEOUT, and PIP_CERT or
    REQUESTS_CA_BUNDLE or SSL_CERT_FILE for the CA bundle). Returns the file's text and the CA
    bundle to put beside it, or None when there is nothing to pass.
    """
    lines = ["[global]"]
    for key, variable in (
        ("index-url", "PIP_INDEX_URL"),
        ("extra-index-url", "PIP_EXTRA_INDEX_URL"),
        ("trusted-host", "PIP_TRUSTED_HOST"),
        ("timeout", "PIP_DEFAULT_TIMEOUT"),
    ):
        if env.get(variable):
            lines.append(f"{key} = {env[variable]}")
    ca: Path | None = None
    for variable in ("PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"):
        if env.get(variable) and Path(env[variable]).is_file():
            ca = Path(env[variable])
            lines.append(f"cert = {BUILD_HOME}/.config/pip/ca.pem")
            break
    if len(lines) == 1:
        return None
    return "\n".join(lines) + "\n", ca


# The build's RUN steps (as root) get a scratch home directory of the host mounted on /root, with
# the pip settings in ~/.config/pip/. /root exists in every Debian-based image, so the mount
# leaves nothing behind in the image (a mount on a missing path leaves an empty mount point in
# the layer), and whatever a step writes to its home stays out of the image too.
BUILD_HOME = "/root"


def build_image(tag: str) -> None:
    base = ensure_base()
    command = [
        "podman",
        "build",
        "--isolation=chroot",
        "--pull=never",
        "--build-arg",
        f"PYTHON_IMAGE={base}",
        "--tag",
        tag,
        "--file",
        str(DOCKERFILE),
    ]
    with tempfile.TemporaryDirectory(prefix="kro-image-build-") as scratch:
        settings = pip_conf(os.environ)
        if settings is not None:
            text, ca = settings
            home = Path(scratch) / "home"
            (home / ".config" / "pip").mkdir(parents=True)
            home.chmod(0o700)
            (home / ".config" / "pip" / "pip.conf").write_text(text)
            if ca is not None:
                shutil.copyfile(ca, home / ".config" / "pip" / "ca.pem")
            command += ["--volume", f"{home}:{BUILD_HOME}"]
            _say(
                "passing the host's pip settings to the build: "
                + ", ".join(line.split(" = ")[0] for line in text.splitlines()[1:])
            )
        command.append(str(REPO))
        _say(f"podman build {tag} on {base}")
        started = time.monotonic()
        _run(command, what="podman build")
    size = int(inspect(tag)["Size"])
    _say(
        f"built {tag} in {time.monotonic() - started:.0f} s; size {size / 1e6:.0f} MB "
        f"({size} bytes, podman image inspect)"
    )


# -- running the image as the chart would --------------------------------------------------------

# Run by the host's /bin/sh inside a private mount namespace (`unshare --mount`), so every mount
# below disappears with the controller process. Arguments: the image's mount point, an empty
# directory to become the container's root, the directory holding the kubeconfig; then the
# command. The environment says the rest: KRO_UID and KRO_GID (the securityContext's runAsUser
# and runAsGroup), KRO_READ_ONLY_ROOT (1 for readOnlyRootFilesystem) and KRO_EMPTY_DIRS (the
# emptyDir volumes, as "path=size" words).
CHROOT_SCRIPT = r"""
set -eu
image=$1 root=$2 secrets=$3
shift 3
mount --bind "$image" "$root"
if [ "$KRO_READ_ONLY_ROOT" = 1 ]; then
    mount -o remount,bind,ro,nosuid,nodev "$root"
fi
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
# A minimal /dev, as a container runtime gives one.
mount -t tmpfs -o nosuid,noexec,mode=0755,size=64k tmpfs "$root/dev"
for node in null zero full random urandom; do
    touch "$root/dev/$node"
    mount --bind "/dev/$node" "$root/dev/$node"
done
# emptyDir volumes (the chart's /tmp): the only writable places.
for volume in $KRO_EMPTY_DIRS; do
    mount -t tmpfs -o "nosuid,nodev,mode=1777,size=${volume#*=}" tmpfs "$root${volume%%=*}"
done
# Credentials, read-only, where a pod finds its mounted Secrets.
mount -t tmpfs -o nosuid,nodev,noexec,mode=0755,size=1m tmpfs "$root/run"
mkdir -p "$root/run/secrets/kro"
mount --bind -o ro "$secrets" "$root/run/secrets/kro"
mount -o remount,bind,ro "$root/run/secrets/kro"
# Into the image; its own setpriv becomes KRO_UID:KRO_GID with no supplementary groups, drops
# every capability, also from the bounding set (capabilities.drop: [ALL]), sets no_new_privs
# (allowPrivilegeEscalation: false), asks to be killed with its parent, and executes the
# command, found through the image's PATH.
exec chroot "$root" setpriv --reuid="$KRO_UID" --regid="$KRO_GID" --clear-groups \
    --inh-caps=-all --bounding-set=-all --no-new-privs --pdeathsig=KILL -- "$@"
"""


@dataclass(frozen=True, kw_only=True)
class ChartContainer:
    """What the chart's Deployment asks of the controller's container."""

    command: list[str]
    args: list[str]
    env: dict[str, str]
    uid: int
    gid: int
    read_only_root: bool
    empty_dirs: dict[str, str]  # mount path -> tmpfs size


def _tmpfs_size(quantity: str | None) -> str:
    """An emptyDir sizeLimit as a tmpfs size: 64Mi -> 64m (tmpfs suffixes are binary)."""
    if not quantity:
        return "64m"
    for suffix, unit in (("Ki", "k"), ("Mi", "m"), ("Gi", "g")):
        if quantity.endswith(suffix) and quantity[: -len(suffix)].isdigit():
            return quantity[: -len(suffix)] + unit
    if quantity.isdigit():
        return quantity
    raise ImageError(f"emptyDir sizeLimit {quantity!r}: only Ki, Mi, Gi or bytes are supported")


def chart_container(deployment: Mapping[str, Any]) -> ChartContainer:
    """The controller container of a rendered Deployment, checked against what this test does.

    The test always drops every capability and sets no_new_privs, so the chart must ask for
    that; it mounts emptyDir volumes as tmpfs and knows no other kind of volume.
    """
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    security = {**(pod.get("securityContext") or {}), **(container.get("securityContext") or {})}
    if "ALL" not in ((security.get("capabilities") or {}).get("drop") or []):
        raise ImageError("the chart does not drop ALL capabilities; this test always does")
    if security.get("allowPrivilegeEscalation") is not False:
        raise ImageError("the chart allows privilege escalation; this test never does")
    if security.get("runAsUser") is None or security.get("runAsGroup") is None:
        raise ImageError("the chart sets no runAsUser/runAsGroup")
    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    empty_dirs: dict[str, str] = {}
    for mount in container.get("volumeMounts") or []:
        volume = volumes[mount["name"]]
        if "emptyDir" not in volume:
            raise ImageError(f"volume {mount['name']}: only emptyDir volumes are supported")
        empty_dirs[mount["mountPath"]] = _tmpfs_size((volume["emptyDir"] or {}).get("sizeLimit"))
    env = {e["name"]: str(e["value"]) for e in container.get("env") or [] if "value" in e}
    return ChartContainer(
        command=[str(w) for w in container.get("command") or []],
        args=[str(w) for w in container.get("args") or []],
        env=env,
        uid=int(security["runAsUser"]),
        gid=int(security["runAsGroup"]),
        read_only_root=bool(security.get("readOnlyRootFilesystem")),
        empty_dirs=empty_dirs,
    )


def render_chart(helm: Path, *, metrics_port: int, health_port: int) -> dict[str, Any]:
    """The chart's Deployment, rendered with `helm template` and the chart's defaults, except:
    loopback ports (the test shares the host's network) and the Lease in the release namespace
    (in a pod, the default is the pod's namespace)."""
    out = _run(
        [
            str(helm),
            "template",
            "kro",
            str(CHART),
            "--namespace",
            RELEASE_NAMESPACE,
            "--set",
            f"config.metricsBindAddress=127.0.0.1:{metrics_port}",
            "--set",
            f"deployment.containerPort={metrics_port}",
            "--set",
            f"config.healthProbeBindAddress=127.0.0.1:{health_port}",
            "--set",
            f"config.leaderElectionNamespace={RELEASE_NAMESPACE}",
        ],
        what="helm template",
        capture=True,
    )
    for document in yaml.safe_load_all(out):
        if isinstance(document, dict) and document.get("kind") == "Deployment":
            return document
    raise ImageError("helm template rendered no Deployment")


@dataclass(frozen=True, kw_only=True)
class ContainerSpec:
    """What a container runtime would run: the image's config merged with the chart's."""

    image_root: Path
    root: Path
    secrets: Path
    argv: list[str]
    env: dict[str, str]
    uid: int
    gid: int
    read_only_root: bool
    empty_dirs: dict[str, str]

    @classmethod
    def of(
        cls,
        config: Mapping[str, Any],
        chart: ChartContainer,
        *,
        image_root: Path,
        root: Path,
        secrets: Path,
    ) -> ContainerSpec:
        """Kubernetes' rules: `command` replaces the image's ENTRYPOINT, `args` its CMD, and the
        container's env overrides the image's. One addition: the kubeconfig's path (a pod
        would use its ServiceAccount)."""
        entrypoint = [str(w) for w in config.get("Entrypoint") or []]
        command = chart.command or entrypoint
        if not command:
            raise ImageError("neither the image nor the chart says what to run")
        env = image_env(config)
        env.update(chart.env)
        return cls(
            image_root=image_root,
            root=root,
            secrets=secrets,
            argv=[*command, *chart.args, f"--kubeconfig={SECRETS_IN_IMAGE}/kubeconfig"],
            env=env,
            uid=chart.uid,
            gid=chart.gid,
            read_only_root=chart.read_only_root,
            empty_dirs=chart.empty_dirs,
        )

    def process_env(self) -> dict[str, str]:
        """The container's environment plus what CHROOT_SCRIPT reads."""
        return dict(
            self.env,
            KRO_UID=str(self.uid),
            KRO_GID=str(self.gid),
            KRO_READ_ONLY_ROOT="1" if self.read_only_root else "0",
            KRO_EMPTY_DIRS=" ".join(f"{path}={size}" for path, size in self.empty_dirs.items()),
        )


def image_env(config: Mapping[str, Any]) -> dict[str, str]:
    """The image's ENV, with PATH and HOME as a runtime sets them when missing."""
    env: dict[str, str] = {}
    for entry in config.get("Env") or []:
        key, _, value = str(entry).partition("=")
        env[key] = value
    env.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    env.setdefault("HOME", "/nonexistent")  # the image user's home
    return env


def container_argv(spec: ContainerSpec) -> list[str]:
    """The host command that runs the container: unshare, then CHROOT_SCRIPT."""
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "--",
        "/bin/sh",
        "-c",
        CHROOT_SCRIPT,
        "kro-container",
        str(spec.image_root),
        str(spec.root),
        str(spec.secrets),
        *spec.argv,
    ]


@contextlib.contextmanager
def mounted_image(name: str) -> Iterator[Path]:
    path = _run(["podman", "image", "mount", name], what="podman image mount", capture=True).strip()
    try:
        yield Path(path)
    finally:
        subprocess.run(["podman", "image", "unmount", name], stdout=subprocess.DEVNULL, check=False)


def _load(path: Path) -> dict[str, Any]:
    return dict(next(d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)))


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status) == 200
    except (OSError, urllib.error.URLError):
        return False


def process_facts(pid: int) -> list[str]:
    """Who the controller runs as and what it may do, read from /proc."""
    facts = []
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    for line in status:
        if line.split(":")[0] in (
            "Uid",
            "Gid",
            "Groups",
            "CapEff",
            "CapPrm",
            "CapBnd",
            "NoNewPrivs",
        ):
            facts.append(" ".join(line.split()))
    for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[4] in ("/", "/tmp", SECRETS_IN_IMAGE):
            facts.append(f"mount {fields[4]} {fields[5]}")
    return facts


class Container:
    """The image's entrypoint running in its chroot; a context manager that stops it (SIGTERM)."""

    def __init__(self, spec: ContainerSpec, log_path: Path) -> None:
        from kro.testing import processes

        self.log_path = log_path
        with log_path.open("wb") as log:
            self.process = subprocess.Popen(
                container_argv(spec),
                env=spec.process_env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=processes.die_with_parent,  # noqa: PLW1509 (prctl only)
            )

    def __enter__(self) -> Container:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            raise ImageError(
                f"the controller exited with {self.process.returncode}:\n{self.log_tail()}"
            )

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # the chart's grace period is 70 s
            try:
                self.process.wait(timeout=70)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        _say(f"controller stopped (exit {self.process.returncode}); its last log lines:")
        print(self.log_tail(8), flush=True)


class Cluster:
    """What the test does to the control plane, as a user with admin credentials."""

    def __init__(self, kubeconfig: Path) -> None:
        from kro.testing.adminapi import AdminApi

        self.admin = AdminApi.from_kubeconfig(kubeconfig)

    def apply(self, path: str, obj: Mapping[str, Any]) -> Any:
        return self.admin.request(
            "PATCH",
            f"{path}?fieldManager={FIELD_MANAGER}&force=true",
            obj,
            content_type="application/apply-patch+yaml",
        )

    def install_crds(self) -> None:
        """kro's CRDs from the chart, as `helm install` puts them in first."""
        from kro.testing.wait import wait_for

        names = []
        for path in sorted(CHART_CRDS.glob("*.yaml")):
            crd = yaml.safe_load(path.read_text())
            names.append(str(crd["metadata"]["name"]))
            self.apply(f"{CRDS_API}/{names[-1]}", crd)
        wait_for(
            lambda: all(self.established(n) for n in names),
            timeout_s=60,
            what=f"CRDs {names} Established",
        )

    def established(self, name: str) -> bool:
        crd = self.admin.get(f"{CRDS_API}/{name}") or {}
        return any(
            c.get("type") == "Established" and c.get("status") == "True"
            for c in (crd.get("status") or {}).get("conditions") or []
        )

    def ensure_namespace(self, name: str) -> None:
        self.admin.ensure(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
        )

    def apply_example(
        self, example: Path, *, check: Callable[[], None], timeout_s: float
    ) -> dict[str, Any]:
        """The RGD until Active, then the instance until ACTIVE; `check` runs at every poll."""
        from kro.testing.adminapi import ApiStatusError
        from kro.testing.wait import wait_for

        rgd, instance = _load(example / "rgd.yaml"), _load(example / "instance.yaml")
        rgd_path = f"{RGDS_API}/{rgd['metadata']['name']}"
        _say(f"applying ResourceGraphDefinition {rgd['metadata']['name']}")
        self.apply(rgd_path, rgd)

        def rgd_active() -> bool:
            check()
            live = self.admin.get(rgd_path) or {}
            return (live.get("status") or {}).get("state") == "Active"

        wait_for(
            rgd_active,
            timeout_s=timeout_s,
            interval_s=0.5,
            what=f"RGD {rgd['metadata']['name']} Active",
        )
        meta = instance["metadata"]
        plural = f"{instance['kind'].lower()}s"  # what the RGD's CRD is generated with
        path = (
            f"/apis/{instance['apiVersion']}/namespaces/{meta['namespace']}/{plural}/{meta['name']}"
        )
        _say(f"applying {instance['kind']} {meta['namespace']}/{meta['name']}")

        def applied() -> bool:
            check()
            try:
                self.apply(path, instance)
            except ApiStatusError as error:
                if error.status == 404:  # the generated CRD is not served yet
                    return False
                raise
            return True

        wait_for(applied, timeout_s=60, interval_s=0.5, what=f"{plural} to be served")

        def active() -> dict[str, Any] | None:
            check()
            live = self.admin.get(path) or {}
            return live if (live.get("status") or {}).get("state") == "ACTIVE" else None

        try:
            return wait_for(
                active,
                timeout_s=timeout_s,
                interval_s=0.5,
                what=f"{instance['kind']} {meta['name']} ACTIVE",
            )
        except AssertionError as error:
            raise AssertionError(f"{error}\ninstance now: {self.admin.get(path)!r}") from None

    def describe(self, live: Mapping[str, Any]) -> list[str]:
        """The instance's state, conditions and status, and its two children."""
        meta, status = live["metadata"], live.get("status") or {}
        namespace, name = meta["namespace"], meta["name"]
        lines = [f"{live['kind']} {namespace}/{name} state={status.get('state')}"]
        for condition in status.get("conditions") or []:
            lines.append(
                f"    condition {condition.get('type')}={condition.get('status')} "
                f"{condition.get('reason', '')}"
            )
        projected = {k: v for k, v in status.items() if k not in ("state", "conditions")}
        lines.append(f"    status {projected}")
        deployment = self.admin.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}")
        service = self.admin.get(f"/api/v1/namespaces/{namespace}/services/{name}")
        available = ((deployment or {}).get("status") or {}).get("availableReplicas")
        cluster_ip = ((service or {}).get("spec") or {}).get("clusterIP")
        lines.append(
            f"    Deployment {name}: {available} available; Service {name}: clusterIP {cluster_ip}"
        )
        return lines


def write_secret(directory: Path, kubeconfig: Path, chart: ChartContainer) -> Path:
    """The kubeconfig, readable by the container's user only (as a Secret volume would be)."""
    directory.mkdir(mode=0o755)
    target = directory / "kubeconfig"
    shutil.copyfile(kubeconfig, target)
    os.chown(target, chart.uid, chart.gid)
    target.chmod(0o400)
    return directory


def run_image_test(tag: str, *, timeout_s: float = 300.0) -> None:
    # Imported here: `build` needs none of the cluster harness.
    from kro.testing import processes, testbin
    from kro.testing.cluster import ClusterOptions, LocalCluster
    from kro.testing.wait import wait_for

    config = inspect(tag).get("Config") or {}
    metrics_port, health_port = processes.free_port(), processes.free_port()
    _say("rendering the chart's Deployment (helm from kro.testing.testbin)")
    chart = chart_container(
        render_chart(
            testbin.ensure(["helm"])["helm"], metrics_port=metrics_port, health_port=health_port
        )
    )
    _say(
        f"image {tag}: entrypoint {config.get('Entrypoint')}, user {config.get('User')}; "
        f"the chart's command {chart.command}, runAsUser/runAsGroup {chart.uid}/{chart.gid}, "
        f"readOnlyRootFilesystem {chart.read_only_root}, emptyDir {chart.empty_dirs}"
    )
    _say("starting a local control plane")
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        state = stack.enter_context(LocalCluster(options=ClusterOptions(nodes=1)))
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kro-image-test-")))
        image_root = stack.enter_context(mounted_image(tag))
        _say(
            f"control plane up at {state.server} ({time.monotonic() - started:.0f} s); "
            f"image mounted read-only at {image_root}"
        )
        cluster = Cluster(Path(state.kubeconfig))
        cluster.install_crds()
        cluster.ensure_namespace(RELEASE_NAMESPACE)
        cluster.ensure_namespace(_load(EXAMPLE / "instance.yaml")["metadata"]["namespace"])
        (scratch / "root").mkdir()
        spec = ContainerSpec.of(
            config,
            chart,
            image_root=image_root,
            root=scratch / "root",
            secrets=write_secret(scratch / "secrets", Path(state.kubeconfig), chart),
        )
        _say(f"running `{' '.join(spec.argv)}` in a chroot of the image")
        container = stack.enter_context(Container(spec, scratch / "controller.log"))
        pid = container.process.pid

        def ready() -> bool:
            container.check_alive()
            return _http_ok(f"http://127.0.0.1:{health_port}/readyz")

        try:
            wait_for(ready, timeout_s=120, interval_s=0.5, what="the controller's /readyz")
            _say(f"controller ready (pid {pid}): " + "; ".join(process_facts(pid)))
            live = cluster.apply_example(EXAMPLE, check=container.check_alive, timeout_s=timeout_s)
        except AssertionError as error:  # a wait that timed out
            raise ImageError(f"{error}\ncontroller log:\n{container.log_tail()}") from None
        _say(f"after {time.monotonic() - started:.0f} s: " + "\n".join(cluster.describe(live)))
        if not _http_ok(f"http://127.0.0.1:{metrics_port}/metrics"):
            raise ImageError(f"no /metrics on 127.0.0.1:{metrics_port}")
        _say(
            f"/metrics answers on 127.0.0.1:{metrics_port}; the controller's process: "
            + "; ".join(process_facts(pid))
        )
    _say("stopped the local control plane and unmounted the image")


# -- command line --------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.image",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("command", choices=("build", "test"))
    parser.add_argument("--tag", default=None, help="image name (default: localhost/kro:VERSION)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="seconds to wait for the RGD and for the instance (test)",
    )
    args = parser.parse_args(argv)
    tag = args.tag or image_tag()
    try:
        check_prerequisites(lambda: base_tarball().exists() or image_exists(BASE_IMAGE))
        build_image(tag)
        if args.command == "test":
            run_image_test(tag, timeout_s=args.timeout)
            _say(f"PASS: {tag} brought examples/nginxapp to ACTIVE")
    except Skip as skip:
        print(f"SKIP: make image{'-test' if args.command == 'test' else ''}: {skip}", flush=True)
        return 0
    except (ImageError, AssertionError) as error:
        print(f"FAIL: {error}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
