"""kro.runtime.kubeconfig: read kubeconfig files for the common cases, without kubernetes-asyncio.

Importing any part of kubernetes-asyncio imports its whole generated API client (~0.3 s of CPU
and ~34 MiB at every start), although a kubeconfig with a token, a token file, a client
certificate, username and password, or nothing but a CA needs none of it. This module reads
those; `kro.runtime.config` hands a user with an `exec` plugin or an `auth-provider` (OIDC, GCP)
to kubernetes-asyncio's loader, the only code that can refresh them.

It reads exactly what kubernetes-asyncio's loader reads, so a kubeconfig means the same to both:
a `:`-separated list of files is merged (a name's first entry wins; `current-context` comes
from the last file that sets it; missing files are skipped); `certificate-authority-data`
wins over `certificate-authority`, `token` over `tokenFile`, a token over username and
password; relative file paths are resolved against the directory of the file that names them;
certificates, keys and `insecure-skip-tls-verify` count only for an `https` server.

Error messages name the file, the entry and the field, never a value: a kubeconfig holds
tokens and keys, and the message ends up in logs and on terminals.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class KubeconfigError(Exception):
    """A kubeconfig that cannot be used; the message says where, never what the value was."""


@dataclass(frozen=True)
class Entry:
    """One named cluster, user or context, and the file it came from (for relative paths)."""

    name: str
    value: Mapping[str, Any]
    source: str

    def base_dir(self) -> str:
        return os.path.abspath(os.path.dirname(self.source))


@dataclass(frozen=True)
class Kubeconfig:
    """The merged kubeconfig files: entries by name, and the current context."""

    files: tuple[str, ...]
    clusters: Mapping[str, Entry]
    users: Mapping[str, Entry]
    contexts: Mapping[str, Entry]
    current_context: Any = None


@dataclass(frozen=True)
class Selection:
    """What one context points at. `user` is None when the context names no (known) user."""

    context: str
    cluster: Entry
    user: Entry | None


@dataclass(frozen=True)
class Material:
    """A credential or CA: inline data (already base64-decoded) or a file path."""

    data: bytes | None = None
    path: str | None = None


@dataclass(frozen=True)
class Resolved:
    """Everything a connection needs from a selection whose user needs no plugin.

    authorization: the Authorization header value (`Bearer ...`, `Basic ...`) or None.
    token_file: a bearer token file to re-read (a `tokenFile` without a `token`).
    """

    server: str
    https: bool
    ca: Material | None = None
    client_certificate: Material | None = None
    client_key: Material | None = None
    verify: bool = True
    tls_server_name: str | None = None
    proxy: str | None = None
    authorization: str | None = None
    token_file: str | None = None


_SECTIONS = ("clusters", "users", "contexts")


def read(paths: str) -> Kubeconfig:
    """Read and merge a `:`-separated list of kubeconfig files (as $KUBECONFIG)."""
    listed = [p for p in paths.split(os.pathsep) if p]
    files: list[str] = []
    sections: dict[str, dict[str, Entry]] = {s: {} for s in _SECTIONS}
    current: Any = None
    for raw in listed:
        path = os.path.expanduser(raw)
        if not os.path.exists(path):
            continue
        prefix = f"{path}: " if len(listed) > 1 else ""
        document = _load_yaml(path, prefix)
        files.append(path)
        for section in _SECTIONS:
            for entry in _entries(document, section, path, prefix):
                sections[section].setdefault(entry.name, entry)
        if "current-context" in document:
            current = document["current-context"]
    if not files:
        raise KubeconfigError("no such file")
    return Kubeconfig(
        files=tuple(files),
        clusters=sections["clusters"],
        users=sections["users"],
        contexts=sections["contexts"],
        current_context=current,
    )


def _load_yaml(path: str, prefix: str) -> Mapping[str, Any]:
    """One file; `prefix` names it in messages when there are several.

    A kubeconfig written as JSON (which is YAML too) is read without importing PyYAML, which
    is ~15 ms of a controller's start; in a cluster no kubeconfig is read at all."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as error:
        raise KubeconfigError(f"{prefix}cannot read it: {error.strerror or error}") from None
    if raw.lstrip().startswith(b"{"):
        with contextlib.suppress(ValueError):
            document = json.loads(raw)
            if isinstance(document, Mapping):
                return document
    document = parse_yaml(raw, prefix)
    if not isinstance(document, Mapping):
        raise KubeconfigError(f"{prefix}not a kubeconfig: the top level is not a mapping")
    return document


def parse_yaml(raw: bytes, prefix: str = "") -> Any:
    """A kubeconfig's YAML, safely loaded (no Python tags); KubeconfigError `<prefix>not
    valid YAML at line L, column C` otherwise, never the parser's own message: it quotes the
    lines around the mistake, tokens and keys included."""
    import yaml  # only when a kubeconfig is read: a controller in a cluster never imports it

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(raw, Loader=loader)  # a safe loader: CSafeLoader or SafeLoader
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise KubeconfigError(f"{prefix}not valid YAML{where}") from None
    except yaml.YAMLError:
        raise KubeconfigError(f"{prefix}not valid YAML") from None


def _entries(document: Mapping[str, Any], section: str, path: str, prefix: str) -> list[Entry]:
    items = document.get(section) or []
    if not isinstance(items, list):
        raise KubeconfigError(f"{prefix}{section} is not a list")
    entries = []
    for index, item in enumerate(items):
        if not isinstance(item, Mapping) or "name" not in item:
            raise KubeconfigError(f"{prefix}{section}[{index}] has no name")
        entries.append(Entry(name=item["name"], value=item, source=path))
    return entries


def select(config: Kubeconfig, context: str | None = None) -> Selection:
    """The context (the given one, else the current one), its cluster and its user."""
    name = context if context is not None else config.current_context
    if name is None:
        raise KubeconfigError("no current-context is set and no context was given")
    found = config.contexts.get(name)
    if found is None:
        raise KubeconfigError(f"no context named {name!r}")
    body = _section(found, "context")
    cluster_name = body.get("cluster")
    if cluster_name is None:
        raise KubeconfigError(f"context {name!r} names no cluster")
    cluster = config.clusters.get(cluster_name)
    if cluster is None:
        raise KubeconfigError(
            f"context {name!r} names cluster {cluster_name!r}, which is not there"
        )
    user_name = body.get("user")
    user = config.users.get(user_name) if user_name else None
    return Selection(context=str(name), cluster=cluster, user=user)


def _section(entry: Entry, key: str, *, may_be_empty: bool = False) -> Mapping[str, Any]:
    """The body of an entry (`context:` of a context, `user:` of a user, ...)."""
    body = entry.value.get(key)
    if not isinstance(body, Mapping) or not (body or may_be_empty):
        raise KubeconfigError(f"{key} {entry.name!r} has no {key} section")
    return body


def needs_plugin(selection: Selection) -> bool:
    """An exec plugin or an auth provider: credentials only kubernetes-asyncio can refresh."""
    if selection.user is None:
        return False
    user = selection.user.value.get("user")
    return isinstance(user, Mapping) and ("exec" in user or "auth-provider" in user)


def resolve(selection: Selection) -> Resolved:
    """Server, TLS material and credentials of a selection for which `needs_plugin` is False."""
    cluster = _section(selection.cluster, "cluster")
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise KubeconfigError(f"cluster {selection.cluster.name!r} has no server")
    server = server.rstrip("/")
    https = server.startswith("https")
    user: Mapping[str, Any] = {}
    if selection.user is not None:
        user = _section(selection.user, "user", may_be_empty=True)  # `user: {}`: anonymous
    authorization, token_file = _credentials(selection.user, user)
    resolved = Resolved(
        server=server,
        https=https,
        verify=not cluster.get("insecure-skip-tls-verify", False),
        tls_server_name=_optional_str(cluster.get("tls-server-name")),
        proxy=_optional_str(cluster.get("proxy-url")),
        authorization=authorization,
        token_file=token_file,
    )
    if not https:
        return resolved
    where = f"cluster {selection.cluster.name!r}"
    ca = _material(cluster, "certificate-authority", selection.cluster.base_dir(), where)
    certificate = key = None
    if selection.user is not None:
        base, where = selection.user.base_dir(), f"user {selection.user.name!r}"
        certificate = _material(user, "client-certificate", base, where)
        key = _material(user, "client-key", base, where)
    return dataclasses.replace(resolved, ca=ca, client_certificate=certificate, client_key=key)


def _credentials(entry: Entry | None, user: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(Authorization header, token file to re-read): a token (inline wins over tokenFile), else
    username and password."""
    if entry is None:
        return None, None
    if "token" in user:
        token = user["token"]
        if token:
            return f"Bearer {token}", None
    elif "tokenFile" in user:
        path = os.path.normpath(os.path.join(entry.base_dir(), str(user["tokenFile"])))
        try:
            with open(path, encoding="utf-8") as f:
                f.read()
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or type(error).__name__
            raise KubeconfigError(
                f"user {entry.name!r}: cannot read tokenFile {path}: {reason}"
            ) from None
        return None, path
    if "username" in user and "password" in user:
        basic = f"{user['username']}:{user['password']}".encode()
        return "Basic " + base64.b64encode(basic).decode("ascii"), None
    return None, None


def _material(section: Mapping[str, Any], key: str, base: str, where: str) -> Material | None:
    """`<key>-data` (base64) if the key is there, else the file `<key>` (must exist)."""
    data_key = f"{key}-data"
    if data_key in section:
        data = section[data_key]
        if not data:
            return None
        try:
            raw = data.encode() if isinstance(data, str) else data
            return Material(data=base64.standard_b64decode(raw))
        except (binascii.Error, AttributeError, TypeError, ValueError):
            raise KubeconfigError(f"{where}: {data_key} is not valid base64") from None
    if section.get(key):
        path = os.path.normpath(os.path.join(base, str(section[key])))
        if not os.path.isfile(path):
            raise KubeconfigError(f"{where}: {key} file {path} does not exist")
        return Material(path=path)
    return None


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)
