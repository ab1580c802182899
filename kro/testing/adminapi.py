"""kro.testing.adminapi: a tiny synchronous admin client for the harness itself.

The harness must work before anything else in the project does (it is what proves the rest), so
it talks to kube-apiserver with the standard library only: urllib over TLS with the cluster's
CA and a static admin token. It is not a general client; `kro.runtime.client` is.
"""

from __future__ import annotations

import base64
import json
import ssl
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

_TIMEOUT_S = 10.0
_RETRIES_429 = 20
_RETRIES_TIMEOUT = 3
"""A GET or DELETE that timed out is sent again this many times: right after an outage drill
(etcd away for 20 s) kube-apiserver may take longer than _TIMEOUT_S to answer one."""
_IDEMPOTENT = frozenset({"GET", "DELETE"})


class ApiStatusError(RuntimeError):
    """The API server answered with an unexpected HTTP status."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:500]}")
        self.status = status
        self.body = body


class AdminApi:
    """Admin access to one cluster: JSON in, JSON out, 404 as None."""

    def __init__(
        self,
        server: str,
        *,
        ca: Path | None = None,
        ca_data: bytes | None = None,
        token: str | None = None,
        client_cert: tuple[Path, Path] | None = None,
    ) -> None:
        self.server = server.rstrip("/")
        self._context = ssl.create_default_context(
            cafile=str(ca) if ca else None, cadata=ca_data.decode() if ca_data else None
        )
        if client_cert is not None:
            self._context.load_cert_chain(str(client_cert[0]), str(client_cert[1]))
        self._token = token

    @classmethod
    def from_kubeconfig(cls, path: Path) -> AdminApi:
        """Admin access from a kubeconfig's current context (token or client certificate)."""
        config = yaml.safe_load(path.read_text())
        context_name = config["current-context"]
        context = next(c["context"] for c in config["contexts"] if c["name"] == context_name)
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
        ca_data = cluster.get("certificate-authority-data")
        # ssl reads a client certificate and key only from files, and only while loading them
        # (in __init__): inline ones are written to a private directory that is removed as
        # soon as they are loaded, so no client key outlives this call on disk.
        with tempfile.TemporaryDirectory(prefix="kro-adminapi-") as spill:

            def material(key: str) -> Path | None:
                if f"{key}-data" in user:
                    target = Path(spill) / key
                    target.touch(0o600)
                    target.write_bytes(base64.b64decode(user[f"{key}-data"]))
                    return target
                return Path(user[key]) if key in user else None

            cert, key = material("client-certificate"), material("client-key")
            return cls(
                cluster["server"],
                ca=Path(cluster["certificate-authority"])
                if "certificate-authority" in cluster
                else None,
                ca_data=base64.b64decode(ca_data) if ca_data else None,
                token=user.get("token"),
                client_cert=(cert, key) if cert and key else None,
            )

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        """One API call; a 429 (e.g. a new CRD's storage initialising) is retried briefly, and
        a GET or DELETE that timed out is sent again (_RETRIES_TIMEOUT)."""
        timeouts = 0
        for _ in range(_RETRIES_429):
            try:
                return self._request_once(method, path, body, content_type)
            except ApiStatusError as error:
                if error.status != 429:
                    raise
                time.sleep(0.5)
            except TimeoutError:
                timeouts += 1
                if method not in _IDEMPOTENT or timeouts > _RETRIES_TIMEOUT:
                    raise
        return self._request_once(method, path, body, content_type)

    def _request_once(self, method: str, path: str, body: Any, content_type: str) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        if self._token:
            req.add_header("Authorization", f"Bearer {self._token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=_TIMEOUT_S, context=self._context) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as error:
            raise ApiStatusError(error.code, error.read().decode(errors="replace")) from error
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode(errors="replace")

    def get(self, path: str) -> Any:
        try:
            return self.request("GET", path)
        except ApiStatusError as error:
            if error.status == 404:
                return None
            raise

    def exists(self, path: str) -> bool:
        return self.get(path) is not None

    def create(self, collection: str, obj: dict[str, Any]) -> Any:
        return self.request("POST", collection, obj)

    def ensure(self, collection: str, obj: dict[str, Any]) -> None:
        """Create `obj` unless it already exists."""
        try:
            self.create(collection, obj)
        except ApiStatusError as error:
            if error.status != 409:
                raise

    def delete(self, path: str) -> None:
        """Delete `path`; gone already is fine, and so is a 409 (a DELETE sent again after a
        timeout meets the object its first one is deleting)."""
        try:
            self.request("DELETE", path)
        except ApiStatusError as error:
            if error.status not in (404, 409):
                raise

    @staticmethod
    def plain_get(url: str) -> bool:
        """True when a plain-HTTP health endpoint answers 200 (etcd)."""
        with urllib.request.urlopen(url, timeout=_TIMEOUT_S) as resp:
            return int(resp.status) == 200

    @staticmethod
    def insecure_get(url: str) -> bool:
        """True when a loopback HTTPS health endpoint with a self-signed cert answers 200."""
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        with urllib.request.urlopen(url, timeout=_TIMEOUT_S, context=context) as resp:
            return int(resp.status) == 200
