"""The local cluster's PKI: identities and serving names that kube-apiserver relies on."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kro.testing import pki


def _load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_admin_certificate_maps_to_system_masters(tmp_path: Path) -> None:
    cert = _load(pki.generate(tmp_path).admin.cert)
    organizations = [
        a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    ]
    assert organizations == ["system:masters"]
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]


def test_apiserver_certificate_is_valid_for_loopback_and_service_names(tmp_path: Path) -> None:
    cert = _load(pki.generate(tmp_path).apiserver.cert)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("127.0.0.1") in names.get_values_for_type(x509.IPAddress)
    assert "kubernetes.default.svc" in names.get_values_for_type(x509.DNSName)


def test_leaf_certificates_are_signed_by_the_cluster_ca(tmp_path: Path) -> None:
    generated = pki.generate(tmp_path)
    ca = _load(generated.ca.cert)
    for pair in (generated.apiserver, generated.admin, generated.controller_manager):
        _load(pair.cert).verify_directly_issued_by(ca)


def test_private_keys_are_not_world_readable(tmp_path: Path) -> None:
    generated = pki.generate(tmp_path)
    for key in (generated.ca.key, generated.admin.key, generated.service_account_key):
        assert key.stat().st_mode & 0o077 == 0
