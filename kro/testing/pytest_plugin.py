"""kro.testing.pytest_plugin: one real cluster per test run, a fresh namespace per test.

Part of `kro[testing]`, and active only where a test suite asks for it (installing kro never
changes anyone else's test runs):

    pytest -p kro.testing.pytest_plugin            # on the command line, or in a conftest.py:
    pytest_plugins = ["kro.testing.pytest_plugin"]

Fixtures:

    kube_cluster     session: the running cluster (started on first use, or the one named by
                     KRO_TEST_KUBECONFIG / KUBECONFIG, which is then never stopped by us; a
                     reused cluster must be local (127.0.0.1 / localhost) unless the run passes
                     --kro-allow-remote-cluster or sets KRO_TEST_ALLOW_REMOTE_CLUSTER=1: tests
                     create and delete namespaces, which must never happen to a real cluster
                     by accident)
    kube_admin       session: an AdminApi with admin credentials
    kube_namespace   function: a new namespace, settled (see `create_namespace`), deleted after
                     the test
    kubectl          session: run the cached kubectl against the cluster
    kube_fleet       session: the session cluster as hub plus 2 member control planes (no
                     nodes), started on first use, each registered on the hub by a registry
                     Secret in kro-system (a `kro.testing.fleet.Fleet`: `.members`, `.secrets()`
                     for manifests to create elsewhere, `.register(namespace=...)`); members are
                     stopped and everything created on the hub is deleted when the session ends

and helpers `service_account_token()` / `service_account_kubeconfig()` for least-privilege
identities, `create_namespace()` for namespaces a test makes itself, and `private_cluster()` for
modules that stop or restart control-plane components. Children of a cluster started here die
with the test process (PDEATHSIG), and the cluster is also stopped on normal exit, on a failed
test and on SIGTERM/SIGINT.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import ipaddress
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from kro.testing import fleet, tempdirs, testbin
from kro.testing.adminapi import AdminApi
from kro.testing.cluster import ClusterOptions, ClusterState, LocalCluster, write_kubeconfig
from kro.testing.wait import wait_for

NAMESPACE_SETTLE_TIMEOUT_S = 60.0
"""How long kube-controller-manager may take to publish a new namespace's defaults."""


@dataclass(frozen=True, slots=True)
class ClusterHandle:
    """What tests need to reach the cluster."""

    kubeconfig: Path
    server: str
    owned: bool  # False when the cluster came from KUBECONFIG and must be left alone
    run_dir: Path | None = None


ALLOW_REMOTE_ENV = "KRO_TEST_ALLOW_REMOTE_CLUSTER"
ALLOW_REMOTE_OPTION = "--kro-allow-remote-cluster"
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def existing_kubeconfig() -> Path | None:
    """The cluster to reuse, if the environment names one."""
    found = _existing()
    return found[1] if found is not None else None


def _existing() -> tuple[str, Path] | None:
    for variable in ("KRO_TEST_KUBECONFIG", "KUBECONFIG"):
        value = os.environ.get(variable)
        if value:
            return variable, Path(value.split(os.pathsep)[0])
    return None


def is_local_server(server: str) -> bool:
    """Whether an API server URL points at this machine's loopback interface."""
    host = (urlsplit(server).hostname or "").lower()
    if host in LOCAL_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def remote_allowed(config: pytest.Config) -> bool:
    """Did the run explicitly allow a cluster that is not on this machine?"""
    flag = os.environ.get(ALLOW_REMOTE_ENV, "").strip().lower()
    return bool(config.getoption("kro_allow_remote_cluster", default=False)) or flag in (
        "1",
        "true",
        "yes",
    )


def refusal(variable: str, server: str) -> str:
    return (
        f"kro.testing refuses to run tests against {server} (named by ${variable}): it is not a "
        "local cluster, and the tests create and delete namespaces in it. Unset the variable to "
        f"start a local control plane, or pass {ALLOW_REMOTE_OPTION} (or set "
        f"{ALLOW_REMOTE_ENV}=1) if this cluster is meant for it."
    )


_started: list[LocalCluster] = []
_report: list[str] = []


def _stop_started() -> None:
    while _started:
        _started.pop().stop()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _stop_started()
    raise KeyboardInterrupt if signum == signal.SIGINT else SystemExit(128 + signum)


def _record_run_dir(cluster: LocalCluster) -> None:
    record = os.environ.get("KRO_TEST_RUN_DIRS_FILE")
    if record:  # lets `make e2e` check afterwards that nothing of this cluster survived
        with open(record, "a") as stream:
            stream.write(f"{cluster.run_dir}\n")


@contextlib.contextmanager
def private_cluster(
    run_dir: Path, options: ClusterOptions | None = None
) -> Iterator[tuple[LocalCluster, ClusterState]]:
    """A control plane of the caller's own, for tests that stop or restart its components:
    those must never disturb the session cluster that other test modules share.

    Like the session cluster it is stopped on exit (a failure or Ctrl-C included), on SIGTERM
    while the session cluster's handler is installed and at interpreter exit; its children die
    with the test process in any case (PDEATHSIG). Its run directory is recorded for `make
    e2e`'s check that no control-plane process survived the run.
    Typical use is a module-scoped fixture over `tmp_path_factory.mktemp(...)`.
    """
    cluster = LocalCluster(run_dir, options or ClusterOptions(nodes=0))
    _started.append(cluster)
    atexit.register(_stop_started)
    _record_run_dir(cluster)
    try:
        yield cluster, cluster.start()
    finally:
        with contextlib.suppress(ValueError):
            _started.remove(cluster)
        cluster.stop()


@pytest.fixture(scope="session")
def kube_cluster(request: pytest.FixtureRequest) -> Iterator[ClusterHandle]:
    found = _existing()
    if found is not None:
        variable, existing = found
        admin = AdminApi.from_kubeconfig(existing)
        if not is_local_server(admin.server) and not remote_allowed(request.config):
            pytest.fail(refusal(variable, admin.server), pytrace=False)
        _report.append(f"reused the cluster named by ${variable} at {admin.server}")
        yield ClusterHandle(kubeconfig=existing, server=admin.server, owned=False)
        return
    cluster = LocalCluster(options=ClusterOptions(nodes=1))
    _started.append(cluster)
    atexit.register(_stop_started)
    previous = signal.signal(signal.SIGTERM, _on_signal)
    try:
        began = time.monotonic()
        _record_run_dir(cluster)
        state = cluster.start()
        _report.append(
            f"local control plane (binaries + start) ready in {time.monotonic() - began:.1f}s "
            f"at {state.server}"
        )
        yield ClusterHandle(
            kubeconfig=Path(state.kubeconfig),
            server=state.server,
            owned=True,
            run_dir=cluster.run_dir,
        )
    finally:
        _stop_started()
        signal.signal(signal.SIGTERM, previous)


FLEET_MEMBERS = 2


@pytest.fixture(scope="session")
def kube_fleet(kube_cluster: ClusterHandle, kube_admin: AdminApi) -> Iterator[fleet.Fleet]:
    """The session cluster as hub and FLEET_MEMBERS member control planes, registered on it.

    Started only when a test asks (two members start in about 8 s on two idle cores). Members
    are guarded like `private_cluster`s (stopped at the end, on SIGTERM and at exit; run
    directories recorded for `make e2e`'s check), and the hub is left as found: every registry
    Secret, and a namespace, that the fleet created there is deleted at the end.
    """
    clusters = {
        name: LocalCluster(options=ClusterOptions(nodes=0))
        for name in fleet.member_names(FLEET_MEMBERS)
    }
    atexit.register(_stop_started)
    previous = signal.signal(signal.SIGTERM, _on_signal)
    for cluster in clusters.values():
        _started.append(cluster)
        _record_run_dir(cluster)

    def forget() -> None:
        for cluster in clusters.values():
            with contextlib.suppress(ValueError):
                _started.remove(cluster)

    began = time.monotonic()
    try:
        try:
            session_fleet = fleet.Fleet(kube_admin, fleet.start_members(clusters))
        except BaseException:
            forget()  # start_members stopped them all
            raise
        try:
            session_fleet.register()
            _report.append(
                f"fleet of {FLEET_MEMBERS} member control planes started and registered in "
                f"{time.monotonic() - began:.1f}s"
            )
            yield session_fleet
        finally:
            try:
                session_fleet.unregister()
            finally:
                forget()
                session_fleet.stop()
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.fixture(scope="session")
def kube_admin(kube_cluster: ClusterHandle) -> AdminApi:
    return AdminApi.from_kubeconfig(kube_cluster.kubeconfig)


def _namespace_manifest(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def namespace_settled(admin: AdminApi, name: str) -> bool:
    """Whether kube-controller-manager has given namespace `name` what it gives every namespace:
    the `kube-root-ca.crt` ConfigMap (root-ca-cert-publisher) and the `default` ServiceAccount
    (serviceaccount controller)."""
    base = f"/api/v1/namespaces/{name}"
    return admin.exists(f"{base}/configmaps/kube-root-ca.crt") and admin.exists(
        f"{base}/serviceaccounts/default"
    )


def create_namespace(
    admin: AdminApi, name: str, *, timeout_s: float = NAMESPACE_SETTLE_TIMEOUT_S
) -> None:
    """Create namespace `name` and return once it is settled (`namespace_settled`).

    Both objects appear asynchronously, a moment after the namespace: a test that lists a
    namespace's ConfigMaps twice, or creates a Pod at once, would otherwise race
    kube-controller-manager (a ConfigMap that "appeared" between two reads; a Pod refused
    because its ServiceAccount does not exist yet).
    """
    admin.create("/api/v1/namespaces", _namespace_manifest(name))
    wait_for(
        lambda: namespace_settled(admin, name),
        timeout_s=timeout_s,
        interval_s=0.05,
        what=f"namespace {name}'s kube-root-ca.crt ConfigMap and default ServiceAccount "
        "(is kube-controller-manager running?)",
    )


@pytest.fixture
def kube_namespace(kube_admin: AdminApi) -> Iterator[str]:
    """A settled namespace for this test only (`create_namespace`); deleted afterwards without
    waiting."""
    name = f"kro-test-{secrets.token_hex(4)}"
    try:
        create_namespace(kube_admin, name)
        yield name
    finally:
        kube_admin.delete(f"/api/v1/namespaces/{name}")


@pytest.fixture(scope="session")
def kubectl(kube_cluster: ClusterHandle) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`kubectl(*args)` with the cluster's kubeconfig; raises on a non-zero exit."""
    binary = testbin.ensure(["kubectl"])["kubectl"]

    def run(
        *args: str, check: bool = True, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(binary), f"--kubeconfig={kube_cluster.kubeconfig}", *args],
            capture_output=True,
            text=True,
            check=check,
            input=input,
            timeout=120,
        )

    return run


def service_account_token(
    admin: AdminApi,
    namespace: str,
    name: str,
    *,
    expiration_s: int = 3600,
    audiences: Sequence[str] = (),
) -> str:
    """A token for a ServiceAccount from the TokenRequest API (creating the SA if needed)."""
    admin.ensure(
        f"/api/v1/namespaces/{namespace}/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}},
    )
    spec: dict[str, Any] = {"expirationSeconds": expiration_s}
    if audiences:
        spec["audiences"] = list(audiences)
    response = admin.create(
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
    )
    return str(response["status"]["token"])


def service_account_kubeconfig(
    cluster: ClusterHandle, admin: AdminApi, namespace: str, name: str
) -> Path:
    """A kubeconfig that authenticates as the ServiceAccount, never as admin."""
    token = service_account_token(admin, namespace, name)
    path = tempdirs.make("kro-sa-") / "kubeconfig"  # removed when the session ends
    return write_kubeconfig(path, cluster.server, _cluster_ca(cluster), {"token": token})


def _cluster_ca(cluster: ClusterHandle) -> bytes:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    entry = config["clusters"][0]["cluster"]
    if "certificate-authority" in entry:
        return Path(entry["certificate-authority"]).read_bytes()
    return base64.b64decode(entry["certificate-authority-data"])


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("kro").addoption(
        ALLOW_REMOTE_OPTION,
        action="store_true",
        default=False,
        dest="kro_allow_remote_cluster",
        help="let kube_cluster reuse a KUBECONFIG whose API server is not on this machine",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e: runs against the real local control plane")


def pytest_unconfigure(config: pytest.Config) -> None:
    tempdirs.remove_all()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for line in _report:
        terminalreporter.write_line(f"kro.testing: {line}")
