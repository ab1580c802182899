"""kro.runtime.certs: the webhook server's TLS certificate, and following it as it rotates.

The API server calls webhooks over HTTPS only, and checks the serving certificate against the
`caBundle` of the webhook configuration (or of the CRD's conversion). Where the certificate
comes from is the operator's business; kro.runtime reads it through a `CertificateSource`:

* `CertDir(path)`: `tls.crt`, `tls.key` and, when present, `ca.crt` in a directory, the layout
  of a `kubernetes.io/tls` Secret mounted as a volume (cert-manager's, say). Secrets mounted as
  volumes are updated in place when the Secret changes, so the files are read again every
  `poll_s` and a changed certificate serves the next handshake, with no restart
  (controller-runtime's certwatcher does the same);
* a `ServingCertificate` held in memory (it is its own source), e.g. one generated for a local
  run. kro.runtime does not generate certificates itself: that needs the `cryptography`
  package, which the core wheel does not depend on. `kro.testing.webhookcerts` (in
  `kro[testing]`) makes a self-signed CA and a serving certificate for loopback addresses, for
  tests and local runs; in a cluster, use a certificate issued for the webhook's Service.

When the source also gives the CA (`ca_pem`), a manager that manages its webhook
configurations writes it into them as `caBundle` (kro.runtime.webhook_server).

How a new certificate takes effect: `TlsReloader.context` is the listening socket's SSL
context, and its `sni_callback` hands every new handshake the context of the latest certificate
(the callback runs for every ClientHello, SNI or not). A certificate that fails to load (a
half-written file, a key that does not match) is logged and the previous one keeps serving.
`ssl` loads certificates from files only, so the PEM read is written to a private temporary
directory (mode 0700, files 0600) for the load and removed at once: what is loaded is exactly
what was read, even while the files change.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import structlog

from .clock import Clock, RealClock

__all__ = ["CertDir", "CertificateSource", "ServingCertificate", "TlsReloader"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class ServingCertificate:
    """PEM bytes of a serving certificate (its chain, leaf first), its key and, optionally,
    the CA clients should trust (what a webhook configuration's caBundle holds)."""

    cert_pem: bytes
    key_pem: bytes
    ca_pem: bytes | None = None

    def read(self) -> ServingCertificate:
        """A certificate in memory is its own (unchanging) source."""
        return self


class CertificateSource(Protocol):
    """Where the serving certificate comes from; read at start and every poll, so `read`
    should be cheap (a few small files)."""

    def read(self) -> ServingCertificate: ...


class CertDir:
    """`cert_file`, `key_file` and the optional `ca_file` of `directory` (a mounted Secret)."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        cert_file: str = "tls.crt",
        key_file: str = "tls.key",
        ca_file: str = "ca.crt",
    ) -> None:
        self.directory = Path(directory)
        self.cert_file, self.key_file, self.ca_file = cert_file, key_file, ca_file

    def read(self) -> ServingCertificate:
        ca = self.directory / self.ca_file
        return ServingCertificate(
            cert_pem=(self.directory / self.cert_file).read_bytes(),
            key_pem=(self.directory / self.key_file).read_bytes(),
            ca_pem=ca.read_bytes() if ca.is_file() else None,
        )

    def __repr__(self) -> str:
        return f"CertDir({str(self.directory)!r})"


def server_context(certificate: ServingCertificate) -> ssl.SSLContext:
    """A TLS 1.2+ server context serving `certificate` (ssl.SSLError if it does not load)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    with tempfile.TemporaryDirectory(prefix="kro-webhook-tls-") as private:
        cert, key = Path(private, "tls.crt"), Path(private, "tls.key")
        for path, data in ((cert, certificate.cert_pem), (key, certificate.key_pem)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
        context.load_cert_chain(cert, key)
    return context


class TlsReloader:
    """The server's SSL context, following `source` (see the module doc).

    `reload()` reads the source and switches to a changed certificate; `run()` does so every
    `poll_s` until cancelled. `on_change(certificate)` is called after each switch (the webhook
    server re-injects a changed CA).
    """

    def __init__(
        self,
        source: CertificateSource,
        *,
        poll_s: float = 10.0,
        clock: Clock | None = None,
        on_change: Callable[[ServingCertificate], object] | None = None,
    ) -> None:
        self.source = source
        self.poll_s = poll_s
        self.on_change = on_change
        self._clock: Clock = clock or RealClock()
        self.certificate = source.read()  # the first load fails loudly: nothing to fall back to
        self._current = server_context(self.certificate)
        self.context = self._current
        self.context.sni_callback = self._select
        self.reloads = 0

    def _select(self, connection: ssl.SSLObject, _name: str | None, _ctx: ssl.SSLContext) -> None:
        if connection.context is not self._current:
            connection.context = self._current

    def reload(self) -> bool:
        """Read the source; True when a new certificate now serves new handshakes."""
        loaded = self._read_changed()
        if loaded is None:
            return False
        self._switch(*loaded)
        return True

    def _read_changed(self) -> tuple[ServingCertificate, ssl.SSLContext] | None:
        try:
            certificate = self.source.read()
            if certificate == self.certificate:
                return None
            return certificate, server_context(certificate)
        except Exception as e:  # a source is anyone's code: keep serving what loaded last
            log.warning("webhook.certificate_reload_failed", source=repr(self.source), error=str(e))
            return None

    def _switch(self, certificate: ServingCertificate, context: ssl.SSLContext) -> None:
        self.certificate, self._current = certificate, context
        self.reloads += 1
        log.info("webhook.certificate_reloaded", source=repr(self.source), reloads=self.reloads)
        if self.on_change is not None:
            self.on_change(certificate)

    async def run(self) -> None:
        """Reload every `poll_s` until cancelled: files are read and keys loaded off the event
        loop, the switch (and `on_change`) happens on it."""
        while True:
            await self._clock.sleep(self.poll_s)
            loaded = await asyncio.to_thread(self._read_changed)
            if loaded is not None:
                self._switch(*loaded)
