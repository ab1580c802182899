"""kro.fleet.credentials: a member cluster's connection from its Secret, inert data only (M-03).

A member cluster is a Secret whose `data[key]` holds a kubeconfig (M-02). Anyone who may write
Secrets in the cluster-secrets namespace writes that kubeconfig, and the hub runs it: an `exec`
plugin or an `auth-provider` would run a command on the hub, a file path would read a file on
the hub (its service-account token, another member's key) and send it to a server of the
writer's choosing, `insecure-skip-tls-verify` or a plain `http` server would hand the hub's
requests to whoever sits on the path. So only inline data is accepted: a bearer `token` and/or
`client-certificate-data` + `client-key-data`, against an `https` server whose CA is inline
(`certificate-authority-data`). Anything else is refused with `ClusterRefused`, whose `reason`
is one of `REASONS` and whose message names the Secret and the field, never a value.

The kubeconfig is read here, not by `kro.runtime.kubeconfig`: that reader resolves file paths
(and reads `tokenFile`) as kubectl does, which is exactly what a member must not do. The TLS
context is built by `kro.runtime.config`'s own builder, which loads inline material through
files that exist only while the context reads them (the ssl module reads only files).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from kro.fleet.errors import ClusterRefused
from kro.runtime.config import ConnectionConfig, StaticAuth, tls_context
from kro.runtime.kubeconfig import KubeconfigError, Material, Resolved, parse_yaml

__all__ = [
    "REASONS",
    "ClusterRefused",
    "MemberCredentials",
    "member_connection",
    "secret_name",
]

REASON_MISSING_KUBECONFIG: Final = "MissingKubeconfig"
REASON_UNPARSABLE: Final = "UnparsableKubeconfig"
REASON_NO_CONTEXT: Final = "NoContext"
REASON_AMBIGUOUS_CONTEXT: Final = "AmbiguousContext"
REASON_INVALID_SERVER: Final = "InvalidServer"
REASON_INSECURE_SERVER: Final = "InsecureServer"
REASON_INSECURE_SKIP_TLS_VERIFY: Final = "InsecureSkipTLSVerify"
REASON_FILE_PATH: Final = "FilePath"
REASON_EXEC_PLUGIN: Final = "ExecPlugin"
REASON_AUTH_PROVIDER: Final = "AuthProvider"
REASON_BASIC_AUTH: Final = "BasicAuth"
REASON_IMPERSONATION: Final = "Impersonation"
REASON_MISSING_CA: Final = "MissingCertificateAuthority"
REASON_MISSING_CREDENTIALS: Final = "MissingCredentials"
REASON_INVALID_DATA: Final = "InvalidData"
REASON_INVALID_TLS: Final = "InvalidTLSMaterial"

REASONS: Final = frozenset(
    {
        REASON_MISSING_KUBECONFIG,
        REASON_UNPARSABLE,
        REASON_NO_CONTEXT,
        REASON_AMBIGUOUS_CONTEXT,
        REASON_INVALID_SERVER,
        REASON_INSECURE_SERVER,
        REASON_INSECURE_SKIP_TLS_VERIFY,
        REASON_FILE_PATH,
        REASON_EXEC_PLUGIN,
        REASON_AUTH_PROVIDER,
        REASON_BASIC_AUTH,
        REASON_IMPERSONATION,
        REASON_MISSING_CA,
        REASON_MISSING_CREDENTIALS,
        REASON_INVALID_DATA,
        REASON_INVALID_TLS,
    }
)
"""Every `ClusterRefused.reason` this module gives: stable codes for logs, metrics and CLIs."""

_CLUSTER_FILES: Final = ("certificate-authority",)
_USER_FILES: Final = ("client-certificate", "client-key", "tokenFile")
_IMPERSONATION: Final = ("as", "as-uid", "as-groups", "as-user-extra")
_ACCEPTED: Final = (
    "only inline credentials (token, client-certificate-data and client-key-data) are accepted"
)


@dataclass(frozen=True, kw_only=True)
class MemberCredentials:
    """What a member's Secret yields once accepted.

    cluster: the member's name (the Secret's name, M-02).
    secret: `namespace/name`, for messages.
    server: the API server URL (https, no trailing slash).
    auth: how it authenticates, for display (`token`, `client-certificate` or both joined by
        `+`); never the credential itself.
    config: everything `kro.runtime.client.Client.from_config` needs, built from inline data.
    """

    cluster: str
    secret: str
    server: str
    auth: str
    config: ConnectionConfig


def secret_name(secret: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name) of a Secret object; empty strings where metadata lacks them."""
    meta = secret.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def member_connection(secret: Mapping[str, Any], *, key: str) -> MemberCredentials:
    """The member cluster a Secret describes, as the API returns the Secret (`data` base64).

    Raises `ClusterRefused` (M-03) for anything but inert inline credentials; see the module
    docstring for what and why.
    """
    namespace, name = secret_name(secret)
    refuse = _Refuser(name, f"{namespace}/{name}")
    document = _document(secret, key, refuse)
    cluster, user = _selected(document, refuse)
    server = _server(cluster, refuse)
    _check_cluster(cluster, refuse)
    _check_user(user, refuse)
    ca = _decoded(cluster, "certificate-authority-data", "the cluster", refuse)
    if ca is None:
        raise refuse(REASON_MISSING_CA, "the cluster has no certificate-authority-data")
    token = _token(user, refuse)
    certificate = _decoded(user, "client-certificate-data", "the user", refuse)
    client_key = _decoded(user, "client-key-data", "the user", refuse)
    if (certificate is None) != (client_key is None):
        present = "client-certificate-data" if certificate is not None else "client-key-data"
        raise refuse(REASON_MISSING_CREDENTIALS, f"the user has {present} without its pair")
    if token is None and certificate is None:
        raise refuse(REASON_MISSING_CREDENTIALS, f"the user has no credentials: {_ACCEPTED}")
    resolved = Resolved(
        server=server,
        https=True,
        ca=Material(data=ca),
        client_certificate=None if certificate is None else Material(data=certificate),
        client_key=None if client_key is None else Material(data=client_key),
        tls_server_name=_optional_str(cluster.get("tls-server-name")),
    )
    try:
        context = tls_context(resolved)
    except KubeconfigError as error:  # its text names the material and OpenSSL's reason only
        raise refuse(REASON_INVALID_TLS, str(error)) from None
    kinds = ["token"] if token is not None else []
    if certificate is not None:
        kinds.append("client-certificate")
    return MemberCredentials(
        cluster=name,
        secret=refuse.secret,
        server=server,
        auth="+".join(kinds),
        config=ConnectionConfig(
            server=server,
            ssl_context=context,
            auth=None if token is None else StaticAuth(f"Bearer {token}"),
            proxy=_optional_str(cluster.get("proxy-url")),
            tls_server_name=resolved.tls_server_name,
        ),
    )


class _Refuser:
    """Builds the refusal for one Secret (its names are in every message)."""

    def __init__(self, cluster: str, secret: str) -> None:
        self.cluster = cluster
        self.secret = secret

    def __call__(self, reason: str, detail: str) -> ClusterRefused:
        return ClusterRefused(self.cluster, secret=self.secret, reason=reason, detail=detail)


def _document(secret: Mapping[str, Any], key: str, refuse: _Refuser) -> Mapping[str, Any]:
    """The kubeconfig in `data[key]`, decoded and safely loaded (no Python tags)."""
    data = secret.get("data") or {}
    encoded = data.get(key) if isinstance(data, Mapping) else None
    if not encoded:
        raise refuse(REASON_MISSING_KUBECONFIG, f"the Secret has no data key {key!r}")
    try:
        raw = base64.b64decode(str(encoded), validate=True)
    except (binascii.Error, ValueError):
        raise refuse(REASON_INVALID_DATA, f"data key {key!r} is not valid base64") from None
    try:
        document = parse_yaml(raw, f"data key {key!r} is ")
    except KubeconfigError as error:
        raise refuse(REASON_UNPARSABLE, str(error)) from None
    if not isinstance(document, Mapping):
        raise refuse(REASON_UNPARSABLE, f"data key {key!r} is not a kubeconfig (not a mapping)")
    return document


def _section(
    document: Mapping[str, Any], section: str, refuse: _Refuser
) -> dict[str, Mapping[str, Any]]:
    """{name: body} of `clusters`, `users` or `contexts`; the first entry of a name wins, as
    kubectl reads it."""
    items = document.get(section) or []
    if not isinstance(items, list):
        raise refuse(REASON_UNPARSABLE, f"{section} is not a list")
    body_key = section[:-1]
    found: dict[str, Mapping[str, Any]] = {}
    for index, item in enumerate(items):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise refuse(REASON_UNPARSABLE, f"{section}[{index}] has no name")
        body = item.get(body_key)
        if body is None:
            body = {}
        if not isinstance(body, Mapping):
            raise refuse(REASON_UNPARSABLE, f"{section}[{index}].{body_key} is not a mapping")
        found.setdefault(item["name"], body)
    return found


def _selected(
    document: Mapping[str, Any], refuse: _Refuser
) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """The cluster and user of the current context, or of the only context there is."""
    contexts = _section(document, "contexts", refuse)
    clusters = _section(document, "clusters", refuse)
    users = _section(document, "users", refuse)
    current = document.get("current-context")
    if current:
        context = contexts.get(str(current))
        if context is None:
            raise refuse(REASON_NO_CONTEXT, "current-context names a context that is not there")
    elif len(contexts) == 1:
        context = next(iter(contexts.values()))
    elif not contexts:
        raise refuse(REASON_NO_CONTEXT, "the kubeconfig has no context")
    else:
        raise refuse(
            REASON_AMBIGUOUS_CONTEXT,
            f"the kubeconfig has {len(contexts)} contexts and no current-context",
        )
    cluster = clusters.get(str(context.get("cluster") or ""))
    if cluster is None:
        raise refuse(REASON_NO_CONTEXT, "the context names no cluster of the kubeconfig")
    user = users.get(str(context.get("user") or ""))
    if user is None:
        raise refuse(
            REASON_MISSING_CREDENTIALS, f"the context names no user of the kubeconfig: {_ACCEPTED}"
        )
    return cluster, user


def _server(cluster: Mapping[str, Any], refuse: _Refuser) -> str:
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise refuse(REASON_INVALID_SERVER, "the cluster has no server")
    try:
        parts = urlsplit(server)
        host = parts.hostname
    except ValueError:
        raise refuse(REASON_INVALID_SERVER, "the cluster's server is not a URL") from None
    if parts.scheme != "https":
        raise refuse(REASON_INSECURE_SERVER, "the cluster's server is not an https URL")
    if not host:
        raise refuse(REASON_INVALID_SERVER, "the cluster's server URL has no host")
    if parts.username is not None or parts.password is not None:
        raise refuse(REASON_INVALID_SERVER, "the cluster's server URL carries user information")
    return server.rstrip("/")


def _check_cluster(cluster: Mapping[str, Any], refuse: _Refuser) -> None:
    if cluster.get("insecure-skip-tls-verify"):
        raise refuse(REASON_INSECURE_SKIP_TLS_VERIFY, "the cluster sets insecure-skip-tls-verify")
    for field in _CLUSTER_FILES:
        if cluster.get(field):
            raise refuse(REASON_FILE_PATH, f"the cluster names a file ({field}): {_ACCEPTED}")


def _check_user(user: Mapping[str, Any], refuse: _Refuser) -> None:
    """The refusals that are about what the user *does*, most dangerous first."""
    if user.get("exec"):
        raise refuse(REASON_EXEC_PLUGIN, f"the user runs an exec plugin: {_ACCEPTED}")
    if user.get("auth-provider"):
        raise refuse(REASON_AUTH_PROVIDER, f"the user has an auth-provider: {_ACCEPTED}")
    for field in _USER_FILES:
        if user.get(field):
            raise refuse(REASON_FILE_PATH, f"the user names a file ({field}): {_ACCEPTED}")
    if user.get("username") or user.get("password"):
        raise refuse(REASON_BASIC_AUTH, f"the user has a username and password: {_ACCEPTED}")
    for field in _IMPERSONATION:
        if user.get(field):
            raise refuse(
                REASON_IMPERSONATION, f"the user impersonates ({field}), which kro does not do"
            )


def _decoded(section: Mapping[str, Any], field: str, where: str, refuse: _Refuser) -> bytes | None:
    value = section.get(field)
    if not value:
        return None
    try:
        return base64.b64decode(str(value))  # line breaks ignored, as kubectl reads it
    except (binascii.Error, ValueError):
        raise refuse(REASON_INVALID_DATA, f"{where}'s {field} is not valid base64") from None


def _token(user: Mapping[str, Any], refuse: _Refuser) -> str | None:
    token = user.get("token")
    if not token:
        return None
    if not isinstance(token, str) or any(c in token.strip() for c in "\r\n"):
        # Never sent: a header with a line break would be refused by the client anyway.
        raise refuse(REASON_INVALID_DATA, "the user's token is not a single-line string")
    return token.strip()


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)
