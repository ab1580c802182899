"""kro.runtime.admission: validating and defaulting webhooks as plain functions of a request.

The API server sends an AdmissionReview (admission.k8s.io/v1, or v1beta1 when a configuration
asks for it; the answer uses the version of the question) and expects `allowed`, a message when
not, and for a mutating webhook the change as a JSON patch. Handlers see none of that:

    def validate(request: AdmissionRequest[Website]) -> None:     # or async def
        if request.object.spec.replicas > 10:
            raise Denied("at most 10 replicas")                   # -> allowed: false, 403
        if request.old_object and request.old_object.spec.image != request.object.spec.image:
            request.warn("changing the image restarts every replica")

    def default(request: AdmissionRequest[Website]) -> None:      # a mutating webhook
        request.object.spec.replicas = request.object.spec.replicas or 1

`request.object` is the object being admitted (on DELETE, the one being deleted) and
`request.old_object` the stored one on UPDATE (and DELETE); both are dicts, or models of the
registered typed kind (kro.runtime.typed), validated: one that does not fit its model is denied
with the model's complaint (422). A defaulting handler changes `request.object` in place; the
patch is computed from the object before and after (kro.runtime.json_patch). For a typed kind,
the changes between the model before and after are replayed onto the object as sent, so fields
the model does not declare are never touched.

What the API server sees:

| the handler... | the answer |
|---|---|
| returns | allowed (with the patch and the warnings, if any) |
| raises `Denied(message, code=403)` | allowed: false, that message and code |
| raises anything else | allowed: false, code 500, `<type>: <message>` (and an error log) |
| runs past its deadline | HTTP 504: the API server applies the configuration's failurePolicy |

The deadline is the `timeout` the API server puts in the URL (the configuration's
timeoutSeconds, 10 s by default) less a tenth (at most a second), so the answer arrives before
the API server gives up; a request without one gets the server's default. Only a handler that
awaits can be interrupted: a synchronous handler is not stopped, its late answer is dropped.
"""

from __future__ import annotations

import asyncio
import base64
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

import orjson
import structlog

from . import json_patch
from .gvk import GVK, GVR
from .reconcile import TerminalError

if TYPE_CHECKING:
    from .typed import KubeModel

__all__ = [
    "REVIEW_VERSIONS",
    "AdmissionRequest",
    "AdmissionResponse",
    "BadReview",
    "Denied",
    "Handler",
    "HandlerTimeout",
    "Operation",
    "UserInfo",
    "admit",
    "decode_review",
]

log = structlog.get_logger(__name__)

T = TypeVar("T")
Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
REVIEW_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")


class BadReview(ValueError):
    """The body is not an AdmissionReview (or ConversionReview) request: HTTP 400."""


class Denied(Exception):
    """Raise from a handler to refuse the request; `message` is what the client is told."""

    def __init__(self, message: str, *, code: int = 403, reason: str = "Forbidden") -> None:
        super().__init__(message)
        self.message, self.code, self.reason = message, code, reason


class HandlerTimeout(Exception):
    """A handler ran past its deadline: no answer, so the failure policy decides (HTTP 504)."""


@dataclass(frozen=True, slots=True)
class UserInfo:
    """Who made the request, as the API server authenticated them."""

    username: str = ""
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(slots=True, eq=False)
class AdmissionRequest(Generic[T]):
    """One admission request, decoded (see the module doc); `raw` is the request as sent."""

    uid: str
    operation: str
    kind: GVK
    resource: GVR
    name: str
    namespace: str
    object: T
    old_object: T | None
    user_info: UserInfo
    dry_run: bool = False
    sub_resource: str = ""
    options: Mapping[str, Any] | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def warn(self, message: str) -> None:
        """Add a warning the client shows (kubectl prints `Warning: ...`), allowed or not."""
        self.warnings.append(message)


Handler = Callable[[AdmissionRequest[Any]], Awaitable[None] | None]


@dataclass(frozen=True, slots=True)
class AdmissionResponse:
    """What a webhook answers: `review(api_version)` is the AdmissionReview to send."""

    uid: str
    allowed: bool
    code: int = 200
    message: str = ""
    reason: str = ""
    patch: tuple[dict[str, Any], ...] = ()
    warnings: tuple[str, ...] = ()

    def review(self, api_version: str = REVIEW_VERSIONS[0]) -> dict[str, Any]:
        response: dict[str, Any] = {"uid": self.uid, "allowed": self.allowed}
        if not self.allowed or self.message:
            status: dict[str, Any] = {"code": self.code, "message": self.message}
            status["status"] = "Success" if self.allowed else "Failure"
            if self.reason:
                status["reason"] = self.reason
            response["status"] = status
        if self.patch:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(orjson.dumps(list(self.patch))).decode()
        if self.warnings:
            response["warnings"] = list(self.warnings)
        return {"apiVersion": api_version, "kind": "AdmissionReview", "response": response}


def decode_review(
    body: bytes, kind: str = "AdmissionReview", versions: Sequence[str] = REVIEW_VERSIONS
) -> tuple[str, dict[str, Any]]:
    """(apiVersion, request) of a review body (an AdmissionReview unless `kind` says
    otherwise); BadReview when it is not one."""
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise BadReview(f"the body is not JSON: {e}") from None
    if not isinstance(review, dict):
        raise BadReview("the body is not a JSON object")
    api_version, sent = review.get("apiVersion"), review.get("kind")
    if sent != kind or api_version not in versions:
        raise BadReview(f"expected a {kind} of {' or '.join(versions)}, got {sent} {api_version}")
    request = review.get("request")
    if not isinstance(request, dict) or not isinstance(request.get("uid"), str):
        raise BadReview(f"the {kind} has no request with a uid")
    return str(api_version), request


def _gvk(value: Any) -> GVK:
    value = value if isinstance(value, Mapping) else {}
    return GVK(
        str(value.get("group", "")), str(value.get("version", "")), str(value.get("kind", ""))
    )


def _gvr(value: Any) -> GVR:
    value = value if isinstance(value, Mapping) else {}
    return GVR(
        str(value.get("group", "")), str(value.get("version", "")), str(value.get("resource", ""))
    )


def _user(value: Any) -> UserInfo:
    value = value if isinstance(value, Mapping) else {}
    extra = value.get("extra") if isinstance(value.get("extra"), Mapping) else {}
    return UserInfo(
        username=str(value.get("username", "")),
        uid=str(value.get("uid", "")),
        groups=tuple(value.get("groups") or ()),
        extra={str(k): tuple(v or ()) for k, v in (extra or {}).items()},
    )


def _copy(obj: Mapping[str, Any]) -> dict[str, Any]:
    copied: dict[str, Any] = orjson.loads(orjson.dumps(obj))
    return copied


def _invalid(uid: str, error: Exception) -> AdmissionResponse:
    return AdmissionResponse(uid, False, 422, str(error), "Invalid")


async def admit(
    raw: Mapping[str, Any],
    handlers: Sequence[Handler],
    *,
    mutating: bool,
    model: type[KubeModel] | None = None,
    deadline_s: float,
) -> AdmissionResponse:
    """Run `handlers` in order on the decoded request `raw` and judge the outcome (module
    doc). Raises HandlerTimeout when they are not done within `deadline_s`."""
    uid = str(raw["uid"])
    sent = raw.get("object") if isinstance(raw.get("object"), dict) else None
    stored = raw.get("oldObject") if isinstance(raw.get("oldObject"), dict) else None
    admitted: dict[str, Any] = sent if sent is not None else (stored or {})
    before: dict[str, Any] | None = None
    try:
        if model is not None:
            obj: Any = model.from_object(admitted)
            old: Any = model.from_object(stored) if stored is not None else None
            before = obj.to_dict() if mutating else None
        else:
            obj = _copy(admitted) if mutating else admitted
            old = stored
    except (TerminalError, ValueError) as e:  # InvalidObject, or a model that cannot dump
        return _invalid(uid, e)
    request: AdmissionRequest[Any] = AdmissionRequest(
        uid=uid,
        operation=str(raw.get("operation", "")),
        kind=_gvk(raw.get("kind")),
        resource=_gvr(raw.get("resource")),
        name=str(raw.get("name") or (admitted.get("metadata") or {}).get("name") or ""),
        namespace=str(raw.get("namespace") or ""),
        object=obj,
        old_object=old,
        user_info=_user(raw.get("userInfo")),
        dry_run=bool(raw.get("dryRun")),
        sub_resource=str(raw.get("subResource") or ""),
        options=raw.get("options") if isinstance(raw.get("options"), Mapping) else None,
        raw=raw,
    )
    where = {
        "kind": request.kind.kind,
        "namespace": request.namespace,
        "name": request.name,
        "operation": request.operation,
    }
    try:
        async with asyncio.timeout(deadline_s) as deadline:
            for handler in handlers:
                result = handler(request)
                if inspect.isawaitable(result):
                    await result
    except Denied as e:
        log.info("webhook.denied", **where, code=e.code, message=e.message)
        return AdmissionResponse(
            uid, False, e.code, e.message, e.reason, (), tuple(request.warnings)
        )
    except TimeoutError as e:
        if deadline.expired():
            log.error("webhook.handler_timed_out", **where, deadline_s=deadline_s)
            raise HandlerTimeout(f"the handler did not answer within {deadline_s:g}s") from e
        return _failed(request, e, where)
    except Exception as e:
        return _failed(request, e, where)
    try:
        patch = _patch(sent, before, request.object, model) if mutating and sent is not None else ()
    except Exception as e:  # a value that is not JSON, a model that no longer serialises
        return _failed(request, e, where)
    return AdmissionResponse(uid, True, patch=patch, warnings=tuple(request.warnings))


def _patch(
    sent: dict[str, Any], before: dict[str, Any] | None, after: Any, model: type | None
) -> tuple[dict[str, Any], ...]:
    """The JSON patch from the object as sent to the defaulted one (`request.object`, changed
    in place or replaced); for a model, its own changes replayed onto the object as sent."""
    if model is not None:
        after = json_patch.apply(sent, json_patch.diff(before, after.to_dict()), lenient=True)
    operations = json_patch.diff(sent, after)
    orjson.dumps(operations)  # fail here, as the handler's error, not while answering
    return tuple(operations)


def _failed(
    request: AdmissionRequest[Any], error: Exception, where: Mapping[str, str]
) -> AdmissionResponse:
    log.error("webhook.handler_failed", **where, error=str(error), exc_info=error)
    message = f"{type(error).__name__}: {error}"
    return AdmissionResponse(
        request.uid, False, 500, message, "InternalError", (), tuple(request.warnings)
    )
