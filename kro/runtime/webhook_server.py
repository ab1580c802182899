"""kro.runtime.webhook_server: the manager's HTTPS server for admission and conversion webhooks.

Handlers are registered per kind, usually through the builder (kro.runtime.builder):

    manager.controller("website").for_(Website).validate(check).default(fill).convert(convert)

or on the server itself for a kind the operator does not reconcile
(`manager.webhooks.validator("ConfigMap", check)`). The manager starts the server before its
caches (a conversion webhook must answer before the operator's own informers can list) and
stops it last, after its controllers drained; it runs on every replica, leader or not.

Paths follow controller-runtime's: `/validate-<group>-<version>-<kind>` and
`/mutate-<group>-<version>-<kind>` (dots of the group as dashes, `core` for the core group,
the kind in lower case), and `/convert` for every CRD's conversion. Handlers see the version
their kind was registered with (a typed model's `gvk`, or the preferred version of a kind named
by name); a managed configuration asks the API server to convert to it (kro.runtime.webhook_config).

Security and limits:
* it listens on 127.0.0.1:9443 unless told otherwise (`WebhookOptions.bind_address`); in a pod,
  ":9443" with a Service in front;
* HTTPS only, TLS 1.2 or later, with the certificate of a `CertificateSource`
  (kro.runtime.certs): `cert_dir` (re-read every `cert_poll_s`, so a renewed Secret is served
  without a restart) or `certificates`; there is no default, since a certificate the API server
  trusts cannot be made up here;
* request bodies up to `max_body_bytes` (16 MiB: an object and its old version at etcd's
  1.5 MiB limit fit with room to spare);
* failures: see kro.runtime.admission and kro.runtime.conversion. A body that is not a review
  gets HTTP 400, a handler past its deadline HTTP 504 (the failure policy decides).

Readiness: `is_ready()` (the manager's "webhooks" readiness check) is true once the server
listens and, with `manage=True`, the configurations are applied.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import orjson
import structlog
from aiohttp import web

from .admission import BadReview, Handler, HandlerTimeout, Operation, admit, decode_review
from .certs import CertDir, CertificateSource, ServingCertificate, TlsReloader
from .client import Client
from .conversion import Converter, convert, decode_conversion
from .gvk import GVK, GVR
from .reader import Kind
from .webhook_config import (
    CRDS,
    MUTATING,
    VALIDATING,
    ClientTarget,
    ConfigurationKind,
    FailurePolicy,
    WebhookEntry,
    WebhookService,
    admission_configuration,
    client_config,
    crd_conversion,
)

if TYPE_CHECKING:
    from .typed import KubeModel

__all__ = ["WebhookOptions", "WebhookServer", "WebhookService", "webhook_path"]

log = structlog.get_logger(__name__)

DEFAULT_OPERATIONS: tuple[Operation, ...] = ("CREATE", "UPDATE")
CONVERSION_TIMEOUT_S = 30.0
"""What the API server allows a conversion webhook (fixed), for a request that names none."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookOptions:
    """How the webhook server listens, which certificate it serves, what it manages.

    bind_address: "host:port"; port 0 picks a free port (`WebhookServer.addresses`).
    cert_dir: a directory with tls.crt, tls.key and optionally ca.crt (kro.runtime.certs).
    certificates: any other certificate source (one of these two is needed).
    cert_poll_s: how often the certificate source is read again.
    manage: apply the webhook configurations and CRD conversions (kro.runtime.webhook_config).
    url / service: where the API server reaches this server, for managed configurations
        (default: https://<bound host>:<port>, when bound to one address).
    failure_policy, timeout_s: written into managed configurations. `timeout_s` (1-30) is
        also the admission handlers' deadline, less a tenth, when a request names no timeout
        (conversion handlers get the API server's 30 s then).
    max_body_bytes: the largest review accepted.
    """

    bind_address: str = "127.0.0.1:9443"
    cert_dir: str | None = None
    certificates: CertificateSource | None = None
    cert_poll_s: float = 10.0
    manage: bool = False
    url: str | None = None
    service: WebhookService | None = None
    failure_policy: FailurePolicy = "Fail"
    timeout_s: int = 10
    max_body_bytes: int = 16 * 1024 * 1024


@dataclass(slots=True)
class _Registration:
    kind: Kind
    validators: list[Handler] = field(default_factory=list)
    validate_operations: set[str] = field(default_factory=set)
    defaulters: list[Handler] = field(default_factory=list)
    default_operations: set[str] = field(default_factory=set)
    converter: Converter | None = None


@dataclass(frozen=True, slots=True)
class _Resolved:
    registration: _Registration
    gvk: GVK
    resource: str | None
    model: type[KubeModel] | None


def webhook_path(verb: str, gvk: GVK) -> str:
    """`/validate-example-kro-run-v1-website` (controller-runtime's form)."""
    group = gvk.group.replace(".", "-") or "core"
    return f"/{verb}-{group}-{gvk.version}-{gvk.kind.lower()}"


_DURATION = re.compile(r"(\d+(?:\.\d*)?)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_duration_s(text: str) -> float | None:
    """Seconds of a Go duration ("10s", "1m30s", "2.5s"); None when it is not one."""
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(number) * _UNITS[unit] for number, unit in parts)


def handler_deadline_s(timeout_s: float) -> float:
    """The handlers' share of the API server's timeout: answer before it gives up."""
    return max(timeout_s - min(1.0, timeout_s / 10), 0.05)


def _bind(address: str) -> tuple[str | None, int]:
    """ "host:port" -> (host, port); ":port" binds every interface. (The manager's probe
    addresses are parsed alike; the manager imports this module, so it cannot be shared.)"""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"webhook bind address {address!r} is not host:port")
    return (host.strip("[]") or None, int(port))


class WebhookServer:
    """Admission and conversion handlers behind one HTTPS listener (module doc)."""

    def __init__(
        self,
        options: WebhookOptions | None = None,
        *,
        name: str = "kro-runtime",
        client: Client | None = None,
        namespace: str | None = None,
    ) -> None:
        self.options = options or WebhookOptions()
        self.name = name
        self.client = client
        self.namespace = namespace
        self._registrations: dict[Kind, _Registration] = {}
        self._runner: web.AppRunner | None = None
        self._tls: TlsReloader | None = None
        self._watch: asyncio.Task[None] | None = None
        self._resolved: list[_Resolved] = []
        self._applied_ca: bytes | None = None
        self._applying: set[asyncio.Task[None]] = set()
        self._ready = False

    # -- registration ---------------------------------------------------------------------------

    def configure(self, **changes: Any) -> None:
        """Change options (WebhookOptions' fields) before the manager runs: how a set-up
        function run by `run(setup)` picks its certificates, e.g. a local run's
        `configure(certificates=self_signed(), manage=True)`."""
        if self._runner is not None:
            raise RuntimeError("configure webhooks before the manager runs")
        self.options = dataclasses.replace(self.options, **changes)

    def _registration(self, kind: Kind) -> _Registration:
        if self._runner is not None:
            raise RuntimeError("register webhooks before the manager runs")
        return self._registrations.setdefault(kind, _Registration(kind))

    def validator(
        self, kind: Kind, fn: Handler, *, operations: tuple[Operation, ...] = DEFAULT_OPERATIONS
    ) -> None:
        """Validate `kind` with `fn` (kro.runtime.admission) on `operations`."""
        registration = self._registration(kind)
        registration.validators.append(fn)
        registration.validate_operations.update(operations)

    def defaulter(
        self, kind: Kind, fn: Handler, *, operations: tuple[Operation, ...] = DEFAULT_OPERATIONS
    ) -> None:
        """Default (mutate) `kind` with `fn` (kro.runtime.admission) on `operations`."""
        registration = self._registration(kind)
        registration.defaulters.append(fn)
        registration.default_operations.update(operations)

    def converter(self, kind: Kind, fn: Converter) -> None:
        """Convert the objects of `kind`'s CRD between its versions with `fn`
        (kro.runtime.conversion); one per CRD."""
        registration = self._registration(kind)
        if registration.converter is not None:
            raise ValueError(f"{kind} already has a conversion handler: one per CRD")
        registration.converter = fn

    @property
    def has_webhooks(self) -> bool:
        return bool(self._registrations)

    # -- state ----------------------------------------------------------------------------------

    def is_ready(self) -> bool:
        """Listening, and with `manage`, configurations applied (a readiness check)."""
        return self._ready

    @property
    def addresses(self) -> list[tuple[str, int]]:
        if self._runner is None:
            return []
        return [(str(a[0]), int(a[1])) for a in self._runner.addresses]

    @property
    def target(self) -> ClientTarget:
        """Where the API server reaches this server: the options' service or URL, else the
        bound address."""
        if self.options.service is not None:
            return self.options.service
        if self.options.url is not None:
            return self.options.url
        host, _ = _bind(self.options.bind_address)
        if host is None or host in ("0.0.0.0", "::") or not self.addresses:
            raise ValueError(
                "a managed webhook configuration needs WebhookOptions(url=...) or service=... "
                "when the server listens on every interface"
            )
        bound_host, port = self.addresses[0]
        return (
            f"https://[{bound_host}]:{port}"
            if ":" in bound_host
            else f"https://{bound_host}:{port}"
        )

    @property
    def certificate(self) -> ServingCertificate | None:
        return self._tls.certificate if self._tls is not None else None

    def paths(self) -> dict[str, str]:
        """Each path served -> what it does (`validate Website.example.kro.run/v1`)."""
        out = {}
        for r in self._resolved:
            what = f"{r.gvk.kind}.{r.gvk.group or 'core'}/{r.gvk.version}"
            if r.registration.validators:
                out[webhook_path("validate", r.gvk)] = f"validate {what}"
            if r.registration.defaulters:
                out[webhook_path("mutate", r.gvk)] = f"default {what}"
            if r.registration.converter is not None:
                out["/convert"] = "convert"
        return out

    # -- running --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Resolve the kinds, listen, follow the certificate, apply managed configurations."""
        if self._runner is not None:
            return
        self._resolved = await self._resolve()
        self._tls = TlsReloader(
            self._source(), poll_s=self.options.cert_poll_s, on_change=self._certificate_changed
        )
        app = web.Application(client_max_size=self.options.max_body_bytes)
        self._add_routes(app)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        self._runner = runner
        host, port = _bind(self.options.bind_address)
        await web.TCPSite(runner, host, port, ssl_context=self._tls.context).start()
        self._watch = asyncio.create_task(self._tls.run(), name="webhook:certificates")
        if self.options.manage:
            await self.apply_configurations()
        self._ready = True
        log.info(
            "webhook.serving",
            addresses=[f"{h}:{p}" for h, p in self.addresses],
            paths=sorted(self.paths()),
            managed=self.options.manage,
        )

    async def stop(self) -> None:
        self._ready = False
        tasks = [t for t in (self._watch, *self._applying) if t is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._runner is not None:
            await self._runner.cleanup()

    def _source(self) -> CertificateSource:
        if self.options.certificates is not None:
            return self.options.certificates
        if self.options.cert_dir is not None:
            return CertDir(self.options.cert_dir)
        raise ValueError(
            "webhooks need a serving certificate: WebhookOptions(cert_dir=...) (a mounted "
            "kubernetes.io/tls Secret) or certificates=... (for a local run, "
            "kro.testing.webhookcerts.self_signed() from kro[testing])"
        )

    async def _resolve(self) -> list[_Resolved]:
        """Each registered kind's GVK and plural (discovery), checked for duplicates."""
        mapper = self.client.mapper if self.client is not None else None
        resolved: list[_Resolved] = []
        seen: dict[GVK, Kind] = {}
        for kind, registration in self._registrations.items():
            model = kind if isinstance(kind, type) else None
            resource: str | None = None
            if isinstance(kind, GVK) or model is not None:
                gvk = kind if isinstance(kind, GVK) else cast("type[KubeModel]", kind).gvk
                if mapper is not None:
                    resource = (await mapper.resource_for(gvk)).gvr.resource
            elif mapper is None:
                raise ValueError(f"{kind!r}: a webhook for a kind given so needs a client")
            else:
                info = await (
                    mapper.kind_for(kind) if isinstance(kind, GVR) else mapper.resolve(str(kind))
                )
                gvk, resource = info.gvk, info.gvr.resource
            if gvk in seen:
                raise ValueError(f"{kind!r} and {seen[gvk]!r} are both {gvk}: register it once")
            seen[gvk] = kind
            resolved.append(_Resolved(registration, gvk, resource, model))
        return resolved

    def _add_routes(self, app: web.Application) -> None:
        converters: dict[tuple[str, str], Converter] = {}
        for r in self._resolved:
            reg = r.registration
            if reg.validators:
                app.router.add_post(
                    webhook_path("validate", r.gvk), self._admission(reg.validators, r, False)
                )
            if reg.defaulters:
                app.router.add_post(
                    webhook_path("mutate", r.gvk), self._admission(reg.defaulters, r, True)
                )
            if reg.converter is not None:
                converters[(r.gvk.group, r.gvk.kind)] = reg.converter
        if converters:
            app.router.add_post("/convert", self._conversion(converters))

    def _deadline_s(self, request: web.Request, default_s: float) -> float:
        asked = go_duration_s(request.query.get("timeout", ""))
        return handler_deadline_s(asked if asked is not None else default_s)

    def _admission(
        self, handlers: list[Handler], resolved: _Resolved, mutating: bool
    ) -> Callable[[web.Request], Any]:
        async def serve(request: web.Request) -> web.Response:
            started = time.monotonic()
            try:
                api_version, raw = decode_review(await request.read())
                answer = await admit(
                    raw,
                    handlers,
                    mutating=mutating,
                    model=resolved.model,
                    deadline_s=self._deadline_s(request, self.options.timeout_s),
                )
            except BadReview as e:
                log.warning("webhook.bad_request", path=request.path, error=str(e))
                return web.Response(status=400, text=str(e))
            except HandlerTimeout as e:
                return web.Response(status=504, text=str(e))
            log.debug(
                "webhook.admission",
                path=request.path,
                uid=answer.uid,
                allowed=answer.allowed,
                patch_ops=len(answer.patch),
                ms=round((time.monotonic() - started) * 1000, 1),
            )
            return _json(answer.review(api_version))

        return serve

    def _conversion(
        self, converters: dict[tuple[str, str], Converter]
    ) -> Callable[[web.Request], Any]:
        async def serve(request: web.Request) -> web.Response:
            started = time.monotonic()
            try:
                api_version, review = decode_conversion(await request.read())
            except BadReview as e:
                log.warning("webhook.bad_request", path=request.path, error=str(e))
                return web.Response(status=400, text=str(e))
            deadline_s = self._deadline_s(request, CONVERSION_TIMEOUT_S)
            answer = await convert(review, converters, deadline_s=deadline_s)
            log.debug(
                "webhook.conversion",
                uid=answer.uid,
                objects=len(review.objects),
                desired=review.desired_api_version,
                failed=answer.failure is not None,
                ms=round((time.monotonic() - started) * 1000, 1),
            )
            return _json(answer.review(api_version))

        return serve

    # -- managed configurations -----------------------------------------------------------------

    def managed_objects(self) -> list[tuple[GVR, dict[str, Any]]]:
        """What `apply_configurations` applies, with the current CA (kro.runtime.webhook_config):
        the validating and mutating configurations (when there are such handlers) and each
        converted CRD's `spec.conversion`."""
        assert self._tls is not None, "start() first"
        ca, target = self._tls.certificate.ca_pem, self.target
        entries: dict[str, list[WebhookEntry]] = {"validate": [], "mutate": []}
        objects: list[tuple[GVR, dict[str, Any]]] = []
        conversions: list[tuple[GVR, dict[str, Any]]] = []
        for r in self._resolved:
            reg = r.registration
            if r.resource is None:
                raise ValueError(f"{r.gvk}: its resource is unknown (no discovery)")
            for verb, handlers, operations in (
                ("validate", reg.validators, reg.validate_operations),
                ("mutate", reg.defaulters, reg.default_operations),
            ):
                if handlers:
                    path, ops = webhook_path(verb, r.gvk), tuple(sorted(operations))
                    entries[verb].append(WebhookEntry(r.gvk, r.resource, path, ops))
            if reg.converter is not None:
                config = client_config(target, "/convert", ca)
                conversions.append((CRDS, crd_conversion(f"{r.resource}.{r.gvk.group}", config)))
        for gvr, kind, verb in (
            (VALIDATING, "ValidatingWebhookConfiguration", "validate"),
            (MUTATING, "MutatingWebhookConfiguration", "mutate"),
        ):
            if entries[verb]:
                body = admission_configuration(
                    cast(ConfigurationKind, kind),
                    self.name,
                    entries[verb],
                    target=target,
                    ca_pem=ca,
                    failure_policy=self.options.failure_policy,
                    timeout_s=self.options.timeout_s,
                    namespace=self.namespace,
                )
                objects.append((gvr, body))
        return objects + conversions

    async def apply_configurations(self) -> None:
        """Server-side apply `managed_objects()`, forced, as the operator's field manager."""
        if self.client is None:
            raise ValueError("managed webhook configurations need Manager(..., client=Client)")
        objects = self.managed_objects()
        for gvr, body in objects:
            await self.client.apply(gvr, body, field_manager=self.name, force=True)
        assert self._tls is not None
        self._applied_ca = self._tls.certificate.ca_pem
        log.info(
            "webhook.configurations_applied",
            name=self.name,
            objects=[f"{body['kind']}/{body['metadata']['name']}" for _, body in objects],
            ca_bundle=self._applied_ca is not None,
        )

    def _certificate_changed(self, certificate: ServingCertificate) -> None:
        """A rotated CA must reach the configurations, or the API server stops trusting us."""
        if not self.options.manage or not self._ready or certificate.ca_pem == self._applied_ca:
            return
        task = asyncio.get_running_loop().create_task(
            self._reapply(), name="webhook:apply-configurations"
        )
        self._applying.add(task)
        task.add_done_callback(self._applying.discard)

    async def _reapply(self) -> None:
        try:
            await self.apply_configurations()
        except Exception as e:  # the next rotation, or a restart, tries again
            log.error("webhook.configurations_apply_failed", error=str(e))


def _json(body: dict[str, Any]) -> web.Response:
    return web.Response(body=orjson.dumps(body), content_type="application/json")
