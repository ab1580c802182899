"""kro.testing.pki: fresh certificates for one local cluster.

Every cluster gets its own CA (ECDSA P-256, one week, as envtest's tinyca), a serving
certificate for kube-apiserver valid for 127.0.0.1 and the in-cluster service names, client
certificates whose CN/O become the user and groups, and a service-account signing key. Nothing
is reused across clusters, so a leaked kubeconfig is worthless once the cluster is gone.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = dt.timedelta(days=7)


@dataclass(frozen=True, slots=True)
class KeyPair:
    """PEM files of one certificate and its key."""

    cert: Path
    key: Path


@dataclass(frozen=True, slots=True)
class ClusterPKI:
    """The files kube-apiserver and its clients need."""

    ca: KeyPair
    apiserver: KeyPair
    admin: KeyPair
    controller_manager: KeyPair
    scheduler: KeyPair
    service_account_key: Path


def new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write(path: Path, key: ec.EllipticCurvePrivateKey, cert: x509.Certificate) -> KeyPair:
    key_path = path.with_suffix(".key")
    cert_path = path.with_suffix(".crt")
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return KeyPair(cert=cert_path, key=key_path)


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def certificate_builder(
    subject: x509.Name, issuer: x509.Name, public: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
    )


def certificate_authority(
    name: x509.Name, *, path_length: int | None = None
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A new self-signed CA named `name`: its key and certificate (signs certificates and
    CRLs, valid a week)."""
    key = new_key()
    cert = (
        certificate_builder(name, name, key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=path_length), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return key, cert


def generate(directory: Path) -> ClusterPKI:
    """Write a complete PKI for one cluster into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_name = _name("kro-test-ca")
    ca_key, ca_cert = certificate_authority(ca_name)
    ca = _write(directory / "ca", ca_key, ca_cert)

    def leaf(name: str, subject: x509.Name, *, server: bool) -> KeyPair:
        key = new_key()
        builder = certificate_builder(subject, ca_name, key.public_key()).add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        if server:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [
                        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                        x509.IPAddress(ipaddress.ip_address("10.0.0.1")),
                        x509.DNSName("localhost"),
                        x509.DNSName("kubernetes"),
                        x509.DNSName("kubernetes.default"),
                        x509.DNSName("kubernetes.default.svc"),
                    ]
                ),
                critical=False,
            )
        return _write(directory / name, key, builder.sign(ca_key, hashes.SHA256()))

    sa_key = new_key()
    sa_path = directory / "sa.key"
    sa_path.write_bytes(
        sa_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    sa_path.chmod(0o600)
    return ClusterPKI(
        ca=ca,
        apiserver=leaf("apiserver", _name("kube-apiserver"), server=True),
        admin=leaf("admin", _name("kro-admin", "system:masters"), server=False),
        controller_manager=leaf(
            "controller-manager", _name("system:kube-controller-manager"), server=False
        ),
        scheduler=leaf("scheduler", _name("system:kube-scheduler"), server=False),
        service_account_key=sa_path,
    )
