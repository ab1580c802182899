"""kro.testing.fleet's builders: a member's kubeconfig is inline only (M-03) and its registry
Secret is what the registry looks for (M-02)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kro.testing import fleet, pki
from kro.testing.adminapi import AdminApi

SERVER = "https://127.0.0.1:6443"


@pytest.fixture(scope="module")
def member_pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory holding a cluster's PKI, as LocalCluster lays it out."""
    run_dir = tmp_path_factory.mktemp("member")
    pki.generate(run_dir / "pki")
    return run_dir


@pytest.fixture(scope="module")
def config(member_pki: Path) -> dict[str, Any]:
    text = fleet.member_kubeconfig("member-1", SERVER, member_pki)
    parsed = yaml.safe_load(text)
    assert isinstance(parsed, dict)
    return parsed


def _all_keys(value: object) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _all_keys(v)}
    if isinstance(value, list):
        return {k for item in value for k in _all_keys(item)}
    return set()


def test_the_member_kubeconfig_names_no_file(config: dict[str, Any]) -> None:
    assert not _all_keys(config) & fleet.FILE_PATH_KEYS
    assert not _all_keys(config) & {"exec", "auth-provider", "insecure-skip-tls-verify", "token"}


def test_the_member_kubeconfig_has_one_current_context_over_https(
    config: dict[str, Any],
) -> None:
    assert [c["name"] for c in config["contexts"]] == ["member-1"]
    assert config["current-context"] == "member-1"
    context = config["contexts"][0]["context"]
    (cluster,) = (c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
    assert cluster["server"] == SERVER
    assert cluster["server"].startswith("https://")
    (user,) = (u["user"] for u in config["users"] if u["name"] == context["user"])
    assert set(user) == {"client-certificate-data", "client-key-data"}


def test_the_inline_ca_is_the_members_and_signs_the_client_certificate(
    config: dict[str, Any], member_pki: Path
) -> None:
    ca_pem = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"])
    assert ca_pem == (member_pki / "pki" / "ca.crt").read_bytes()
    ca = x509.load_pem_x509_certificate(ca_pem)
    user = config["users"][0]["user"]
    cert = x509.load_pem_x509_certificate(base64.b64decode(user["client-certificate-data"]))
    cert.verify_directly_issued_by(ca)
    subject = cert.subject
    assert subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "kro-fleet"
    assert subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "system:masters"
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.CLIENT_AUTH in usages
    # The inline key is the certificate's own.
    key = load_pem_private_key(base64.b64decode(user["client-key-data"]), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    assert key.public_key() == cert.public_key()


def test_a_plain_http_server_is_refused() -> None:
    with pytest.raises(ValueError, match="not https"):
        fleet.inline_kubeconfig("m", "http://127.0.0.1:8080", b"ca", b"cert", b"key")


def test_the_registry_secret_is_labelled_and_carries_the_kubeconfig_under_its_key() -> None:
    secret = fleet.registry_secret("member-1", "apiVersion: v1\n")
    assert secret["kind"] == "Secret"
    assert secret["metadata"] == {
        "name": "member-1",
        "namespace": "kro-system",
        "labels": {"multicluster.runtime/cluster": "true"},
    }
    assert base64.b64decode(secret["data"]["kubeconfig"]).decode() == "apiVersion: v1\n"


def test_the_registry_secret_follows_the_controller_flags() -> None:
    secret = fleet.registry_secret(
        "east", "text", namespace="fleet", label="example.com/member=yes", key="config"
    )
    assert secret["metadata"]["namespace"] == "fleet"
    assert secret["metadata"]["labels"] == {"example.com/member": "yes"}
    assert set(secret["data"]) == {"config"}


@pytest.mark.parametrize("label", ["no-equals", "=value"])
def test_a_label_that_is_not_key_value_is_refused(label: str) -> None:
    with pytest.raises(ValueError, match="key=value"):
        fleet.registry_secret("member-1", "text", label=label)


def test_member_names_default_and_given() -> None:
    assert fleet.member_names(3) == ["member-1", "member-2", "member-3"]
    assert fleet.member_names(2, ["east", "west"]) == ["east", "west"]
    with pytest.raises(ValueError, match="distinct"):
        fleet.member_names(2, ["east", "east"])


class FakeHub:
    """The part of AdminApi the registry uses, over a set of object paths."""

    def __init__(self, *existing: str) -> None:
        self.objects = set(existing)
        self.deleted: list[str] = []

    def exists(self, path: str) -> bool:
        return path in self.objects

    def request(self, method: str, path: str, body: object, content_type: str) -> None:
        assert (method, content_type) == ("PATCH", "application/apply-patch+yaml")
        assert "fieldManager=kro-testing-fleet" in path
        self.objects.add(path.partition("?")[0])

    def delete(self, path: str) -> None:
        self.deleted.append(path)
        self.objects.discard(path)


_NO_PLANE = cast(fleet.ControlPlane, None)  # registry work never touches it


def _fleet(hub: FakeHub, *names: str) -> fleet.Fleet:
    members = [
        fleet.FleetMember(name, Path("unused"), f"config of {name}", SERVER, _NO_PLANE)
        for name in names
    ]
    return fleet.Fleet(cast(AdminApi, hub), members)


def test_unregister_deletes_what_register_created_and_nothing_else() -> None:
    ns = "/api/v1/namespaces/kro-system"
    hub = FakeHub(f"{ns}/secrets/member-1")  # already there: someone else's
    the_fleet = _fleet(hub, "member-1", "member-2")
    manifests = the_fleet.register()
    assert [m["metadata"]["name"] for m in manifests] == ["member-1", "member-2"]
    assert hub.objects == {ns, f"{ns}/secrets/member-1", f"{ns}/secrets/member-2"}
    the_fleet.unregister()
    assert hub.deleted == [f"{ns}/secrets/member-2", ns]  # the Secret before its namespace


def test_unregister_in_one_namespace_keeps_the_others() -> None:
    hub = FakeHub("/api/v1/namespaces/kro-system")
    the_fleet = _fleet(hub, "member-1")
    the_fleet.register()
    the_fleet.register(namespace="other")
    the_fleet.unregister("other")
    assert hub.deleted == ["/api/v1/namespaces/other/secrets/member-1", "/api/v1/namespaces/other"]
    assert "/api/v1/namespaces/kro-system/secrets/member-1" in hub.objects
    the_fleet.unregister()
    assert hub.deleted[-1] == "/api/v1/namespaces/kro-system/secrets/member-1"
    assert "/api/v1/namespaces/kro-system" in hub.objects


class FakePlane:
    """A control plane that starts at once (or fails to), over a run directory with a PKI."""

    def __init__(self, run_dir: Path, port: int, *, fails: bool = False) -> None:
        self.run_dir = run_dir
        self.port = port
        self.fails = fails
        self.stopped = 0
        pki.generate(run_dir / "pki")

    def start(self, component: str | None = None, *, timeout_s: float = 0) -> FakeState:
        if self.fails:
            raise RuntimeError("etcd did not become ready in time")
        return FakeState(f"https://127.0.0.1:{self.port}")

    def stop(self, component: str | None = None, *, kill: bool = False, grace_s: float = 0) -> None:
        self.stopped += 1


class FakeState:
    def __init__(self, server: str) -> None:
        self.server = server


def test_start_members_gives_each_member_its_own_inline_kubeconfig(tmp_path: Path) -> None:
    planes = {name: FakePlane(tmp_path / name, 7000 + i) for i, name in enumerate(["a", "b"])}
    members = fleet.start_members(planes)  # type: ignore[arg-type]
    assert [(m.name, m.server) for m in members] == [
        ("a", "https://127.0.0.1:7000"),
        ("b", "https://127.0.0.1:7001"),
    ]
    for member in members:
        assert member.kubeconfig_path == tmp_path / member.name / "fleet.kubeconfig"
        assert member.kubeconfig_path.read_text() == member.kubeconfig_text
        assert member.kubeconfig_path.stat().st_mode & 0o077 == 0  # a client key inside
        assert yaml.safe_load(member.kubeconfig_text)["current-context"] == member.name
    assert not any(plane.stopped for plane in planes.values())


def test_a_member_that_fails_to_start_stops_the_whole_fleet(tmp_path: Path) -> None:
    planes = {
        "a": FakePlane(tmp_path / "a", 7000),
        "b": FakePlane(tmp_path / "b", 7001, fails=True),
    }
    with pytest.raises(RuntimeError, match="etcd did not become ready"):
        fleet.start_members(planes)  # type: ignore[arg-type]
    assert [plane.stopped for plane in planes.values()] == [1, 1]
