"""Builders shared by the fleet's unit tests: kubeconfigs, member Secrets, a TLS member server,
and the strings that must never leave kro (tokens, key material, their base64)."""

from __future__ import annotations

import base64
import json
import ssl
from collections.abc import Iterable, Mapping
from typing import Any, Final

import yaml

from kro.testing import pki

NAMESPACE: Final = "kro-system"
LABEL: Final = "multicluster.runtime/cluster=true"
LABELS: Final = {"multicluster.runtime/cluster": "true"}
TOKEN: Final = "tok-7c1d9e-member-credential-never-shown"
ROTATED_TOKEN: Final = "tok-55aa01-rotated-credential-never-shown"
PASSWORD: Final = "pw-41b2-never-shown"


def b64(data: bytes | str) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.b64encode(raw).decode()


def kubeconfig(
    cluster: Mapping[str, Any],
    user: Mapping[str, Any] | None,
    *,
    current: str | None = "main",
    extra_contexts: Iterable[str] = (),
) -> dict[str, Any]:
    """One cluster `c`, one user `u` (if given) and a context `main` joining them."""
    contexts = [{"name": "main", "context": {"cluster": "c", "user": "u"}}]
    contexts += [{"name": n, "context": {"cluster": "c", "user": "u"}} for n in extra_contexts]
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": dict(cluster)}],
        "users": [] if user is None else [{"name": "u", "user": dict(user)}],
        "contexts": contexts,
    }
    if current is not None:
        doc["current-context"] = current
    return doc


def token_kubeconfig(server: str, certs: pki.ClusterPKI, token: str = TOKEN) -> dict[str, Any]:
    """An inline, acceptable kubeconfig: CA data and a bearer token."""
    ca = b64(certs.ca.cert.read_bytes())
    return kubeconfig({"server": server, "certificate-authority-data": ca}, {"token": token})


def secret(
    doc: Mapping[str, Any] | str | bytes | None,
    *,
    name: str = "east",
    namespace: str = NAMESPACE,
    key: str = "kubeconfig",
    labels: Mapping[str, str] = LABELS,
) -> dict[str, Any]:
    """A Secret as the API returns it: `data` values base64; `doc` None leaves the key out."""
    data: dict[str, str] = {}
    if doc is not None:
        raw = doc if isinstance(doc, str | bytes) else yaml.safe_dump(dict(doc))
        data[key] = b64(raw)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "type": "Opaque",
        "data": data,
    }


def never_shown(certs: pki.ClusterPKI, *docs: Mapping[str, Any]) -> list[str]:
    """Strings that must appear in no message, log line, metric or output: the tokens, the
    password, the client key (PEM body lines and base64) and each document's base64."""
    key = certs.admin.key.read_bytes()
    body = [line for line in key.decode().splitlines() if line and not line.startswith("-----")]
    texts = [TOKEN, ROTATED_TOKEN, PASSWORD, b64(TOKEN), b64(key), *body]
    for doc in docs:
        texts.append(b64(yaml.safe_dump(dict(doc))))
        texts.append(json.dumps(dict(doc)))
    return texts


def server_context(certs: pki.ClusterPKI, *, client_certificates: bool = False) -> ssl.SSLContext:
    """A member API server's TLS: the PKI's serving certificate, optionally requiring a client
    certificate signed by the PKI's CA."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certs.apiserver.cert, certs.apiserver.key)
    if client_certificates:
        context.load_verify_locations(certs.ca.cert)
        context.verify_mode = ssl.CERT_REQUIRED
    return context
