"""kro.runtime.config: where the API server is and how to authenticate to it.

Kubeconfig files are read by kro.runtime.kubeconfig, and the in-cluster service account here,
for every user that has a token, a token file, a client certificate, username and password or
nothing; a user with an exec plugin or an OIDC/GCP auth provider goes to kubernetes-asyncio's
loader, complete and current, which we reuse for those and only those. Importing any part of
kubernetes-asyncio imports its whole generated API client (~0.3 s of CPU and ~34 MiB), so it is
imported only for them. The result is a `ConnectionConfig` (base URL, one `ssl.SSLContext`, an
`AuthProvider`) that `kro.runtime.client.Client` turns into its own aiohttp sessions.

Tokens expire (exec plugins on EKS: ~15 min; projected service-account tokens rotate), and the
loaders do not refresh on their own, so every provider here re-reads on a schedule and again
when the client reports a 401 through `AuthProvider.invalidate()`.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

import structlog

from kro.runtime.errors import KubeError

if TYPE_CHECKING:
    from kro.runtime.kubeconfig import Material, Resolved

log = structlog.get_logger(__name__)

SERVICE_ACCOUNT_DIR: Final = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_REREAD_S: Final = 60.0
"""How often a token file is re-read; kubelet rotates projected tokens well before expiry."""
EXPIRY_MARGIN_S: Final = 10.0
"""Refresh an exec credential this long before its expirationTimestamp, to absorb clock skew."""


class ConfigError(KubeError):
    """No usable kubeconfig or in-cluster environment; fix the environment, retrying won't help."""


class AuthProvider(Protocol):
    """Supplies the Authorization header, refreshing credentials when they age or are rejected."""

    async def authorization(self) -> str | None:
        """The full header value (`Bearer <token>`, `Basic <b64>`), or None for no header."""
        ...

    def invalidate(self) -> None:
        """The server answered 401: the next `authorization()` must fetch fresh credentials."""
        ...


@dataclass(frozen=True, kw_only=True)
class ConnectionConfig:
    """Everything the client needs to open connections; built once by a loader or by hand.

    server: base URL without a trailing slash, e.g. `https://10.0.0.1:6443`.
    ssl_context: used for https URLs; None means the system trust store (or plain http).
    auth: per-request Authorization; None sends none (client certificates or an open test server).
    headers: extra headers sent on every request.
    proxy: the kubeconfig `proxy-url`; the environment's proxy variables are deliberately ignored
        (reading them costs two thread-pool hops per request in aiohttp).
    tls_server_name: the kubeconfig `tls-server-name` (SNI and certificate name to verify).
    """

    server: str
    ssl_context: ssl.SSLContext | None = None
    auth: AuthProvider | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    proxy: str | None = None
    tls_server_name: str | None = None


class StaticAuth:
    """A fixed header value: a kubeconfig `token`, or basic auth; refresh cannot help it."""

    def __init__(self, header_value: str | None) -> None:
        self._value = header_value

    async def authorization(self) -> str | None:
        return self._value

    def invalidate(self) -> None:
        return None


class TokenFileAuth:
    """A bearer token read from a file (service account or `tokenFile`), re-read at most every
    `reread_s` seconds and right after a 401, so rotated tokens are picked up."""

    def __init__(
        self,
        path: str,
        *,
        reread_s: float = TOKEN_REREAD_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._path = path
        self._reread_s = reread_s
        self._monotonic = monotonic
        self._value: str | None = None
        self._read_at = 0.0

    async def authorization(self) -> str | None:
        now = self._monotonic()
        if self._value is None or now - self._read_at >= self._reread_s:
            self._value = f"Bearer {self._read()}"
            self._read_at = now
        return self._value

    def invalidate(self) -> None:
        self._value = None

    def _read(self) -> str:
        try:
            with open(self._path, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as e:
            raise ConfigError(f"cannot read token file {self._path}: {e}") from e
        if not token:
            raise ConfigError(f"token file {self._path} is empty")
        return token


class ExecAuth:
    """Tokens from a kubeconfig exec plugin, via kubernetes-asyncio's loader.

    The loader runs the plugin once and would keep sending the token after it expires; we re-run
    it `EXPIRY_MARGIN_S` before `expirationTimestamp`, and after a 401 when none was given.
    Concurrent callers share one plugin run.
    """

    def __init__(self, loader: Any, *, wall_clock: Callable[[], float] = time.time) -> None:
        self._loader = loader
        self._wall_clock = wall_clock
        self._value: str | None = getattr(loader, "token", None)
        self._expires_at = _expiry_epoch(loader)
        self._lock = asyncio.Lock()

    async def authorization(self) -> str | None:
        if self._is_fresh():
            return self._value
        async with self._lock:
            if not self._is_fresh():
                await self._refresh()
        return self._value

    def invalidate(self) -> None:
        self._value = None

    def _is_fresh(self) -> bool:
        if self._value is None:
            return False
        return self._expires_at is None or self._wall_clock() < self._expires_at - EXPIRY_MARGIN_S

    async def _refresh(self) -> None:
        if hasattr(self._loader, "exec_plugin_expiry"):
            del self._loader.exec_plugin_expiry  # forces the loader to run the plugin again
        await self._loader.load_from_exec_plugin()
        self._value = getattr(self._loader, "token", None)
        self._expires_at = _expiry_epoch(self._loader)
        log.info("config.credentials_refreshed", source="exec", expires_at=self._expires_at)


class LoaderAuth:
    """OIDC and GCP auth providers: ask the loader again every `recheck_s` seconds (it refreshes
    only when the token is expired) and after a 401."""

    def __init__(
        self,
        loader: Any,
        *,
        recheck_s: float = TOKEN_REREAD_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._loader = loader
        self._recheck_s = recheck_s
        self._monotonic = monotonic
        self._value: str | None = getattr(loader, "token", None)
        self._checked_at = monotonic()
        self._lock = asyncio.Lock()

    async def authorization(self) -> str | None:
        if self._value is not None and self._monotonic() - self._checked_at < self._recheck_s:
            return self._value
        async with self._lock:
            if self._value is None or self._monotonic() - self._checked_at >= self._recheck_s:
                await self._loader._load_authentication()
                self._value = getattr(self._loader, "token", None)
                self._checked_at = self._monotonic()
        return self._value

    def invalidate(self) -> None:
        self._value = None


def _expiry_epoch(loader: Any) -> float | None:
    expiry = getattr(loader, "exec_plugin_expiry", None)
    if isinstance(expiry, datetime.datetime):
        if expiry.tzinfo is None:
            expiry = expiry.replace(tzinfo=datetime.UTC)
        return expiry.timestamp()
    return None


def build_ssl_context(
    *,
    ca_file: str | None = None,
    cert_file: str | None = None,
    key_file: str | None = None,
    verify: bool = True,
) -> ssl.SSLContext:
    """One context per client (building one loads the CA bundle: ~25 ms)."""
    ctx = ssl.create_default_context(cafile=ca_file)
    if cert_file:
        ctx.load_cert_chain(cert_file, key_file)
    if not verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


async def load_kubeconfig(
    path: str | None = None, *, context: str | None = None
) -> ConnectionConfig:
    """Load one kubeconfig file (or a `:`-separated list, like $KUBECONFIG) and one context.

    kro.runtime.kubeconfig reads it; only a user with an exec plugin or an auth provider is
    handed to kubernetes-asyncio's loader (whose import costs ~0.3 s and ~34 MiB).
    """
    from kro.runtime import kubeconfig

    path = path or _home_kubeconfig()
    try:
        selection = kubeconfig.select(kubeconfig.read(path), context)
        if not kubeconfig.needs_plugin(selection):
            config = _connection(kubeconfig.resolve(selection))
            log.debug("config.loaded", source="kubeconfig", server=config.server, context=context)
            return config
    except kubeconfig.KubeconfigError as e:
        raise ConfigError(f"cannot load kubeconfig {path}: {e}") from None
    return await _load_with_plugin(path, context)


def _connection(resolved: Resolved) -> ConnectionConfig:
    """A ConnectionConfig from a `kro.runtime.kubeconfig.Resolved`."""
    auth: AuthProvider | None = None
    if resolved.token_file:
        auth = TokenFileAuth(resolved.token_file)
    elif resolved.authorization:
        auth = StaticAuth(resolved.authorization)
    return ConnectionConfig(
        server=resolved.server,
        ssl_context=tls_context(resolved) if resolved.https else None,
        auth=auth,
        proxy=resolved.proxy,
        tls_server_name=resolved.tls_server_name,
    )


def tls_context(resolved: Resolved) -> ssl.SSLContext:
    """The same context `build_ssl_context` makes. Inline (`-data`) material goes through files
    that exist only while the context loads them: the ssl module reads only files."""
    import tempfile

    from kro.runtime.kubeconfig import KubeconfigError

    with tempfile.TemporaryDirectory(prefix="kro-tls-") as scratch:

        def path_of(material: Material | None, name: str) -> str | None:
            if material is None:
                return None
            if material.path is not None:
                return material.path
            file = os.path.join(scratch, name)
            with open(os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
                f.write(material.data or b"")
            return file

        try:
            ctx = ssl.create_default_context(cafile=path_of(resolved.ca, "ca.crt"))
        except (ssl.SSLError, OSError) as e:
            why = _why(e)
            raise KubeconfigError(
                f"cannot use the cluster's certificate-authority: {why}"
            ) from None
        cert_file = path_of(resolved.client_certificate, "client.crt")
        if cert_file:
            try:
                ctx.load_cert_chain(cert_file, path_of(resolved.client_key, "client.key"))
            except (ssl.SSLError, OSError) as e:
                why = _why(e)
                raise KubeconfigError(f"cannot use the user's client certificate: {why}") from None
    if not resolved.verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _why(error: OSError) -> str:
    """OpenSSL's reason (`NO_CERTIFICATE_OR_CRL_FOUND`, `KEY_VALUES_MISMATCH`) or the OS's;
    neither quotes the material."""
    if isinstance(error, ssl.SSLError):
        return str(error.reason or type(error).__name__)
    return str(error.strerror or type(error).__name__)


async def _load_with_plugin(path: str, context: str | None) -> ConnectionConfig:
    """An exec plugin or an auth provider: kubernetes-asyncio's loader, kept for refreshes."""
    from kubernetes_asyncio.client import Configuration
    from kubernetes_asyncio.config import ConfigException
    from kubernetes_asyncio.config.kube_config import load_kube_config

    cfg = Configuration()
    try:
        loader = await load_kube_config(
            config_file=path, context=context, client_configuration=cfg, persist_config=False
        )
    except ConfigException as e:
        raise ConfigError(f"cannot load kubeconfig {path}: {e}") from e
    except Exception as e:  # the loader signals bad files with asserts, KeyErrors, yaml errors
        # Not the parser's text: it can quote the file (tokens, keys) around the error.
        raise ConfigError(f"cannot load kubeconfig {path}: {type(e).__name__}") from None
    auth = _auth_for(loader, cfg)
    tls = None
    if str(cfg.host).startswith("https"):
        tls = build_ssl_context(
            ca_file=cfg.ssl_ca_cert,
            cert_file=cfg.cert_file,
            key_file=cfg.key_file,
            verify=bool(cfg.verify_ssl),
        )
    log.debug("config.loaded", source="kubeconfig", server=cfg.host, context=context)
    return ConnectionConfig(
        server=str(cfg.host).rstrip("/"),
        ssl_context=tls,
        auth=auth,
        proxy=cfg.proxy,
        tls_server_name=cfg.tls_server_name,
    )


def _auth_for(loader: Any, cfg: Any) -> AuthProvider | None:
    user = getattr(loader, "_user", None)
    provider = getattr(loader, "provider", None)
    if provider in ("gcp", "oidc"):
        return LoaderAuth(loader)
    if user is not None and "exec" in user and hasattr(loader, "token"):
        return ExecAuth(loader)
    if user is not None and "tokenFile" in user and "token" not in user:
        return TokenFileAuth(_resolve(str(user["tokenFile"]), getattr(user, "path", None)))
    value = cfg.api_key.get("BearerToken")
    return StaticAuth(str(value)) if value else None


def _resolve(path: str, config_path: str | None) -> str:
    if os.path.isabs(path) or not config_path:
        return path
    return os.path.join(os.path.dirname(os.path.abspath(config_path)), path)


def load_incluster(
    *,
    environ: Mapping[str, str] | None = None,
    token_path: str = f"{SERVICE_ACCOUNT_DIR}/token",
    ca_path: str = f"{SERVICE_ACCOUNT_DIR}/ca.crt",
) -> ConnectionConfig:
    """The pod's service account: host from the environment, token re-read every minute.

    Checks what kubernetes-asyncio's in-cluster loader checks, with its messages.
    """
    env = os.environ if environ is None else environ
    try:
        server = _incluster_server(env)
        _require_content(token_path, "Service token file does not exist.", "Token file")
        _require_content(ca_path, "Service certification file does not exists.", "Cert file")
    except (ConfigError, OSError, ValueError) as e:
        raise ConfigError(f"not running in a cluster: {e}") from e
    log.debug("config.loaded", source="in-cluster", server=server)
    return ConnectionConfig(
        server=server,
        ssl_context=build_ssl_context(ca_file=ca_path),
        auth=TokenFileAuth(token_path),
    )


def _incluster_server(env: Mapping[str, str]) -> str:
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    if host is None or port is None:
        raise ConfigError("Service host/port is not set.")
    if not host or not port:
        raise ConfigError("Service host/port is set but empty.")
    if ":" in host or "%" in host:  # an IPv6 address, as Go's net.JoinHostPort brackets it
        return f"https://[{host}]:{port}"
    return f"https://{host}:{port}"


def _require_content(path: str, missing: str, what: str) -> None:
    if not os.path.isfile(path):
        raise ConfigError(missing)
    with open(path, encoding="utf-8") as f:
        if not f.read():
            raise ConfigError(f"{what} exists but empty.")


async def load_default(path: str | None = None, *, context: str | None = None) -> ConnectionConfig:
    """`path`, else $KUBECONFIG, else ~/.kube/config if it exists, else in-cluster."""
    if path:
        return await load_kubeconfig(path, context=context)
    found = os.environ.get("KUBECONFIG") or _existing(_home_kubeconfig())
    if found:
        return await load_kubeconfig(found, context=context)
    return load_incluster()


def _home_kubeconfig() -> str:
    return os.path.expanduser("~/.kube/config")


def _existing(path: str) -> str | None:
    return path if os.path.exists(path) else None
