"""kro.testing.webhookcerts: throw-away certificates for a webhook server run locally or in tests.

kro.runtime serves webhooks over HTTPS with a certificate it is given (kro.runtime.certs) and
never makes one: that takes the `cryptography` package, which only `kro[testing]` installs. For a
local run or a test, this module makes a fresh CA (ECDSA P-256) and a serving certificate signed
by it for the loopback names, valid for a week; the CA is what a managed webhook configuration
injects as `caBundle`, so the API server trusts the server and nothing else does:

    from kro.runtime.webhook_server import WebhookOptions
    from kro.testing.webhookcerts import self_signed

    ManagerOptions(webhook=WebhookOptions(certificates=self_signed(), manage=True))

`write_cert_dir(directory)` writes the same into files (tls.crt, tls.key, ca.crt), the layout of
a mounted kubernetes.io/tls Secret, to exercise `WebhookOptions(cert_dir=...)` and rotation.
In a cluster, use a certificate issued for the webhook's Service (cert-manager).
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Sequence
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kro.runtime.certs import ServingCertificate
from kro.testing.pki import certificate_authority, certificate_builder, new_key

__all__ = ["LOOPBACK", "self_signed", "write_cert_dir"]

LOOPBACK = ("127.0.0.1", "::1", "localhost")


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def self_signed(
    hosts: Sequence[str] = LOOPBACK, *, common_name: str = "kro-runtime-webhook"
) -> ServingCertificate:
    """A new CA and a serving certificate for `hosts` (IP addresses or DNS names)."""
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{common_name}-ca")])
    ca_key, ca = certificate_authority(ca_name, path_length=0)
    key = new_key()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    leaf = (
        certificate_builder(subject, ca_name, key.public_key())
        .add_extension(x509.SubjectAlternativeName([_san(h) for h in hosts]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return ServingCertificate(
        cert_pem=leaf.public_bytes(serialization.Encoding.PEM),
        key_pem=_pem(key),
        ca_pem=ca.public_bytes(serialization.Encoding.PEM),
    )


def write_cert_dir(
    directory: str | os.PathLike[str], hosts: Sequence[str] = LOOPBACK
) -> ServingCertificate:
    """`self_signed(hosts)` written as tls.crt, tls.key (0600) and ca.crt in `directory`.

    Each file is replaced by a rename, as the kubelet swaps a Secret volume's files, so a
    reader never sees half a file."""
    certificate = self_signed(hosts)
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    for name, data in (
        ("tls.key", certificate.key_pem),
        ("tls.crt", certificate.cert_pem),
        ("ca.crt", certificate.ca_pem or b""),
    ):
        temporary = target / f".{name}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        temporary.replace(target / name)
    return certificate
