"""kro.testing.fleet: a hub and N member control planes on one machine (issue #35).

A member is a control plane without nodes (nothing of kro's fleet work needs Pods to run) that
the hub knows through a registry Secret (M-02): a Secret in the cluster-secrets namespace,
carrying the registry label, whose `kubeconfig` key holds an inline kubeconfig (M-03: https
server, `certificate-authority-data`, `client-certificate-data` + `client-key-data`, one current
context, never a file path, so the Secret is inert data that works from any machine).

    members = start_members({"member-1": LocalCluster(...), "member-2": LocalCluster(...)})
    fleet = Fleet(hub_admin, members)
    fleet.register()            # the namespace and one Secret per member, on the hub
    ...
    fleet.unregister(); fleet.stop()

Members start in parallel: one takes about 7 s, two together about 8 s on two idle cores (a
member has no nodes, so no kube-scheduler and no kwok), where in a row they would take 14 s.
Each member keeps its control plane handle, so an outage drill can
`member.cluster.stop("kube-apiserver")` and `start("kube-apiserver")` later.

This module takes control planes from its caller instead of making them: `python -m
kro.testing.cluster up --members N` uses it, so it cannot import kro.testing.cluster itself
(the import graph has no cycle). `ControlPlane` is what it needs of a `LocalCluster`.
"""

from __future__ import annotations

import base64
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kro.api.names import CLUSTER_SECRETS_KEY_DEFAULT, CLUSTER_SECRETS_LABEL_DEFAULT
from kro.testing import pki, progress
from kro.testing.adminapi import AdminApi

DEFAULT_NAMESPACE = "kro-system"
"""Where registry Secrets go unless told: kro's default controller namespace, which is also
where `--cluster-secrets-namespace` points by default (M-02)."""
FIELD_MANAGER = "kro-testing-fleet"
CLIENT_COMMON_NAME = "kro-fleet"
"""The user the hub's registry credentials authenticate as in each member: a name of its own
(not the member's admin) so a member's audit log tells the hub's requests apart."""
CLIENT_ORGANIZATION = "system:masters"
KUBECONFIG_FILE = "fleet.kubeconfig"
"""The inline kubeconfig, also written into the member's run directory for kubectl users."""
FILE_PATH_KEYS = frozenset(
    {"certificate-authority", "client-certificate", "client-key", "tokenFile"}
)
"""kubeconfig keys that name files: M-03 refuses them, so nothing here ever writes one."""


class ControlPlaneState(Protocol):
    """What a started control plane tells (a `ClusterState`)."""

    @property
    def server(self) -> str: ...


class ControlPlane(Protocol):
    """What the fleet needs of a member's control plane (a `LocalCluster`): start and stop it
    whole or one component at a time, and its run directory, where kro.testing.pki's files
    are (`pki/ca.crt`, `pki/ca.key`)."""

    @property
    def run_dir(self) -> Path: ...

    def start(
        self, component: str | None = None, *, timeout_s: float = ...
    ) -> ControlPlaneState: ...

    def stop(
        self, component: str | None = None, *, kill: bool = False, grace_s: float = ...
    ) -> None: ...

    def restart(
        self, component: str, *, kill: bool = False, grace_s: float = ..., timeout_s: float = ...
    ) -> float: ...


@dataclass(frozen=True, slots=True)
class FleetMember:
    """One member: its name (the registry Secret's name), its inline kubeconfig (text and the
    file holding it), its server and its control plane for outage drills."""

    name: str
    kubeconfig_path: Path
    kubeconfig_text: str
    server: str
    cluster: ControlPlane

    def admin(self) -> AdminApi:
        """Admin access to this member with its inline credentials (what the hub gets)."""
        return AdminApi.from_kubeconfig(self.kubeconfig_path)


def member_names(count: int, names: Sequence[str] | None = None) -> list[str]:
    """`member-1`..`member-N`, or the names given (as many as `count`)."""
    if names is None:
        return [f"member-{index}" for index in range(1, count + 1)]
    if len(names) != count or len(set(names)) != count:
        raise ValueError(f"{count} distinct member names needed, got {list(names)}")
    return list(names)


def _say(message: str) -> None:
    print(f"[fleet] {message}", file=sys.stderr, flush=True)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def issue_client_certificate(
    ca_cert_pem: bytes,
    ca_key_pem: bytes,
    *,
    common_name: str = CLIENT_COMMON_NAME,
    organization: str = CLIENT_ORGANIZATION,
) -> tuple[bytes, bytes]:
    """A client certificate and key (PEM) signed by the member's CA, kept in memory: they go
    inline into a kubeconfig and never become files of their own."""
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise TypeError("kro.testing.pki's CA key is ECDSA")
    key = pki.new_key()
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )
    cert = (
        pki.certificate_builder(subject, ca_cert.subject, key.public_key())
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def inline_kubeconfig(
    name: str, server: str, ca_pem: bytes, client_cert_pem: bytes, client_key_pem: bytes
) -> str:
    """A kubeconfig (YAML) that M-03 accepts: an https server, its CA inline, a client
    certificate and key inline, one context named `name` that is current."""
    if not server.startswith("https://"):
        raise ValueError(f"member {name}: server {server!r} is not https (M-03)")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": name,
                "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem)},
            }
        ],
        "users": [
            {
                "name": CLIENT_COMMON_NAME,
                "user": {
                    "client-certificate-data": _b64(client_cert_pem),
                    "client-key-data": _b64(client_key_pem),
                },
            }
        ],
        "contexts": [{"name": name, "context": {"cluster": name, "user": CLIENT_COMMON_NAME}}],
        "current-context": name,
    }
    return yaml.safe_dump(config, sort_keys=False)


def member_kubeconfig(name: str, server: str, run_dir: Path) -> str:
    """The inline kubeconfig for a started member, with a client certificate issued by its CA
    (read from kro.testing.pki's files under `run_dir`)."""
    ca_pem = (run_dir / "pki" / "ca.crt").read_bytes()
    cert_pem, key_pem = issue_client_certificate(ca_pem, (run_dir / "pki" / "ca.key").read_bytes())
    return inline_kubeconfig(name, server, ca_pem, cert_pem, key_pem)


def parse_label(label: str) -> tuple[str, str]:
    """`key=value` (the `--cluster-secrets-label` syntax) into its two halves."""
    key, sep, value = label.partition("=")
    if not sep or not key:
        raise ValueError(f"label {label!r} is not key=value")
    return key, value


def registry_secret(
    name: str,
    kubeconfig_text: str,
    *,
    namespace: str = DEFAULT_NAMESPACE,
    label: str = CLUSTER_SECRETS_LABEL_DEFAULT,
    key: str = CLUSTER_SECRETS_KEY_DEFAULT,
) -> dict[str, Any]:
    """The registry Secret that makes cluster `name` a member (M-02): labelled, with the
    kubeconfig under `key` (in `data`, base64, so a server-side apply owns exactly that)."""
    label_key, label_value = parse_label(label)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": {label_key: label_value}},
        "type": "Opaque",
        "data": {key: _b64(kubeconfig_text.encode())},
    }


def _apply(hub: AdminApi, path: str, obj: dict[str, Any]) -> None:
    hub.request(
        "PATCH",
        f"{path}?fieldManager={FIELD_MANAGER}&force=true",
        obj,
        content_type="application/apply-patch+yaml",  # JSON is YAML
    )


def apply_registry(hub: AdminApi, secrets: Sequence[Mapping[str, Any]]) -> list[str]:
    """Server-side apply each Secret's namespace and the Secrets on the hub; returns the paths
    of what did not exist before (the Secrets, and a namespace made here), in creation order,
    so a caller that must leave nothing behind deletes exactly those."""
    created: list[str] = []
    for secret in secrets:
        namespace = str(secret["metadata"]["namespace"])
        ns_path = f"/api/v1/namespaces/{namespace}"
        if ns_path not in created and not hub.exists(ns_path):
            _apply(
                hub,
                ns_path,
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
            )
            created.append(ns_path)
        path = f"{ns_path}/secrets/{secret['metadata']['name']}"
        existed = hub.exists(path)
        _apply(hub, path, dict(secret))
        if not existed:
            created.append(path)
    return created


def start_members(clusters: Mapping[str, ControlPlane]) -> list[FleetMember]:
    """Start every member's control plane in parallel and give each its inline kubeconfig.

    Says on stderr what it starts and, every progress interval, which members it still waits
    for (each cluster also says which component it waits for). When one fails (or the wait is
    interrupted), every member is stopped and the error raised: half a fleet is no fleet, and
    the caller has nothing left to stop.
    """
    began = time.monotonic()
    names = list(clusters)
    _say(f"starting {len(names)} member control plane(s) in parallel: {', '.join(names)}")
    with ThreadPoolExecutor(max(len(names), 1), thread_name_prefix="kro-fleet-start") as pool:
        futures = {pool.submit(clusters[name].start): name for name in names}
        try:
            _await_starts(futures, began)
            members = [
                _member(name, clusters[name], future.result().server)
                for future, name in futures.items()
            ]
        except BaseException:
            wait(futures)  # a start in flight must end before its stop
            for cluster in clusters.values():
                cluster.stop()
            raise
    _say(f"{len(members)} member(s) ready in {time.monotonic() - began:.1f}s")
    return members


def _member(name: str, cluster: ControlPlane, server: str) -> FleetMember:
    """The handle of a started member, its inline kubeconfig also written (owner-only) into
    its run directory for kubectl."""
    text = member_kubeconfig(name, server, cluster.run_dir)
    path = cluster.run_dir / KUBECONFIG_FILE
    path.touch(0o600)
    path.write_text(text)
    return FleetMember(name, path, text, server, cluster)


def _await_starts(futures: Mapping[Future[ControlPlaneState], str], began: float) -> None:
    """Wait for every start; say which member is ready, and who is still awaited every
    progress interval; raise the first failure at once."""
    ticker = progress.Ticker()
    pending = set(futures)
    while pending:
        done, pending = wait(pending, timeout=0.5, return_when=FIRST_EXCEPTION)
        for future in done:
            error = future.exception()
            if error is not None:
                raise error
            _say(f"{futures[future]} ready in {time.monotonic() - began:.1f}s")
        if pending and ticker.due():
            waiting = ", ".join(sorted(futures[f] for f in pending))
            _say(f"still waiting for {waiting}: {progress.format_duration(ticker.elapsed_s())}")


@dataclass
class Fleet:
    """A hub and its members: builds and creates the registry Secrets, and remembers what it
    created on the hub so `unregister()` leaves the hub as it found it."""

    hub: AdminApi
    members: Sequence[FleetMember]
    _created: list[str] = field(default_factory=list)

    def member(self, name: str) -> FleetMember:
        for member in self.members:
            if member.name == name:
                return member
        raise KeyError(f"no member {name!r} in {[m.name for m in self.members]}")

    def secrets(
        self,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        label: str = CLUSTER_SECRETS_LABEL_DEFAULT,
        key: str = CLUSTER_SECRETS_KEY_DEFAULT,
    ) -> list[dict[str, Any]]:
        """Every member's registry Secret manifest (not created: for tests that create them
        where and when the kro controller under test expects them)."""
        return [
            registry_secret(m.name, m.kubeconfig_text, namespace=namespace, label=label, key=key)
            for m in self.members
        ]

    def register(
        self,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        label: str = CLUSTER_SECRETS_LABEL_DEFAULT,
        key: str = CLUSTER_SECRETS_KEY_DEFAULT,
    ) -> list[dict[str, Any]]:
        """Create (server-side apply) the members' registry Secrets on the hub, and their
        namespace if missing; `unregister()` deletes what this created."""
        manifests = self.secrets(namespace=namespace, label=label, key=key)
        for path in apply_registry(self.hub, manifests):
            if path not in self._created:
                self._created.append(path)
        return manifests

    def unregister(self, namespace: str | None = None) -> None:
        """Delete what `register()` created (in `namespace` only, if given): Secrets first,
        then a namespace it made."""
        prefix = None if namespace is None else f"/api/v1/namespaces/{namespace}"
        chosen = [
            p for p in self._created if prefix is None or p == prefix or p.startswith(prefix + "/")
        ]
        for path in reversed(chosen):
            self.hub.delete(path)
            self._created.remove(path)

    def stop(self) -> None:
        """Stop every member's control plane, in parallel (each takes seconds to stop)."""
        if not self.members:
            return
        with ThreadPoolExecutor(len(self.members), thread_name_prefix="kro-fleet-stop") as pool:
            for future in [pool.submit(m.cluster.stop) for m in self.members]:
                future.result()
