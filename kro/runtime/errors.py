"""kro.runtime.errors: everything the client, discovery and informers raise. aiohttp never escapes.

    KubeError                     base of the tree; catch this to catch any client failure
    ├── ApiError                  the server answered with a failure Status (fields: status, reason,
    │   │                         message, details, retry_after_s)
    │   ├── NotFound              404: the object or its kind is not there (yet)
    │   ├── AlreadyExists         409 AlreadyExists: create of a name that is taken
    │   ├── Conflict              409 Conflict: stale resourceVersion / SSA field conflict
    │   ├── Forbidden             403: RBAC said no
    │   ├── Unauthorized          401: credentials missing, wrong or expired
    │   ├── Invalid               422: the object failed validation (.causes)
    │   ├── Gone                  410: resourceVersion or continue token too old; relist
    │   ├── TooManyRequests       429: throttled (priority & fairness); retry after .retry_after_s
    │   ├── ServerTimeout         504 / reason Timeout: the server gave up; retry may help
    │   └── InternalError         5xx: the server failed; retry may help
    ├── TransportError            no usable answer: connection, TLS, undecodable body (fields:
    │   │                         method, path, status, reason)
    │   └── RequestTimeout        no answer in time; also a TimeoutError
    └── NoKindMatch               discovery knows no resource for a kind or resource name

Mapping happens at one place: `error_from_status` (a Status body plus an HTTP code). Messages
travel into logs, Events and conditions, so every message is scrubbed of credentials
(`kro.runtime.redact`) and cut to `MAX_MESSAGE_BYTES` when the error is built. A TransportError
says what failed (method, path, HTTP status when one arrived, the failure's class and a fixed
description), never what was sent or received: no headers, no bodies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, TypedDict

from kro.runtime.redact import scrub

MAX_MESSAGE_BYTES: Final = 1024


class StatusCause(TypedDict):
    """One entry of `details.causes` in a Status: which field, and what is wrong with it."""

    field: str
    reason: str
    message: str


class KubeError(Exception):
    """Base for every error kro.runtime's client layer raises."""


class ApiError(KubeError):
    """The server answered with a failure; branch on the subclass, or on `.reason`.

    `retry_after_s` carries the server's Retry-After header (or `details.retryAfterSeconds`) so
    callers that own retry policy can honour it.
    """

    def __init__(
        self,
        *,
        status: int,
        reason: str,
        message: str,
        details: Mapping[str, Any] | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        self.status = status
        self.reason = reason
        self.message = truncate(message)
        self.details: dict[str, Any] = dict(details or {})
        self.retry_after_s = retry_after_s
        super().__init__(f"{status} {reason}: {self.message}")

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only constructors break default exception pickling (used by multiprocessing).
        return (_rebuild, (type(self), self._fields()))

    def _fields(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "details": self.details,
            "retry_after_s": self.retry_after_s,
        }


def _rebuild(cls: type[ApiError], fields: dict[str, Any]) -> ApiError:
    return cls(**fields)


class NotFound(ApiError):
    """The object, or its kind, does not exist (yet). Retrying helps only if someone creates it."""


class AlreadyExists(ApiError):
    """A create named an object that exists. Read it instead, or apply."""


class Conflict(ApiError):
    """Our resourceVersion was stale, or SSA found a field owned by another manager.

    Re-read, recompute, retry (or apply with force).
    """


class Forbidden(ApiError):
    """Authorization denied the request. Retrying will not help until RBAC changes."""


class Unauthorized(ApiError):
    """Authentication failed. The client already refreshed its credentials once before raising."""


class Invalid(ApiError):
    """The server rejected the object as invalid. No retry helps until the object changes."""

    @property
    def causes(self) -> list[StatusCause]:
        """Field-level reasons from `details.causes`, normalised to field/reason/message."""
        out: list[StatusCause] = []
        for cause in self.details.get("causes") or ():
            if isinstance(cause, Mapping):
                out.append(
                    StatusCause(
                        field=str(cause.get("field", "")),
                        reason=str(cause.get("reason", "")),
                        message=truncate(str(cause.get("message", ""))),
                    )
                )
        return out


class Gone(ApiError):
    """The resourceVersion (or continue token) is too old for the server: list again."""


class TooManyRequests(ApiError):
    """The server throttled us. The client retried up to its limit before raising this."""


class ServerTimeout(ApiError):
    """The server could not finish in time (504, or reason Timeout). Retrying may help."""


class InternalError(ApiError):
    """The server failed (5xx). Retrying may help."""


class TransportError(KubeError):
    """No usable answer: connection refused or reset, TLS failure, or an undecodable body.

    The request may or may not have reached the server, so a write may have happened.
    Fields (empty when not known): `method` and `path` of the request (no query string), `status`
    when a response head arrived before the failure, and `reason`, the class name of the
    underlying failure (`ServerDisconnectedError`, `ClientPayloadError`, `TimeoutError`, ...).
    """

    def __init__(
        self,
        message: str,
        *,
        method: str = "",
        path: str = "",
        status: int | None = None,
        reason: str = "",
    ) -> None:
        self.method = method
        self.path = path
        self.status = status
        self.reason = reason
        super().__init__(scrub(message, MAX_MESSAGE_BYTES))


class RequestTimeout(TransportError, TimeoutError):
    """No response (for a watch: no bytes) in time; `except TimeoutError` catches it too."""


class NoKindMatch(KubeError):
    """Discovery knows no resource for this kind (or resource): its CRD may not exist yet.

    Raised after one discovery refresh; retry later, or after the CRD is established.
    """


_BY_REASON: Final[Mapping[str, type[ApiError]]] = {
    "NotFound": NotFound,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Forbidden": Forbidden,
    "Unauthorized": Unauthorized,
    "Invalid": Invalid,
    "Gone": Gone,
    "Expired": Gone,
    "TooManyRequests": TooManyRequests,
    "Timeout": ServerTimeout,
    "ServerTimeout": ServerTimeout,
    "InternalError": InternalError,
    "ServiceUnavailable": InternalError,
}

_BY_STATUS: Final[Mapping[int, type[ApiError]]] = {
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
    504: ServerTimeout,
}

_REASON_FOR_STATUS: Final[Mapping[int, str]] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Gone",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def truncate(text: str, limit: int = MAX_MESSAGE_BYTES) -> str:
    """`text` without credentials, cut to `limit` UTF-8 bytes with the cut marked (`scrub`).

    Server messages are scrubbed too: an admission webhook or a proxy in front of the API
    server may echo what it was sent.
    """
    return scrub(text, limit)


def error_from_status(
    status: int, body: Mapping[str, Any] | str | bytes | None, *, retry_after_s: float | None = None
) -> ApiError:
    """Build the most specific error for a failure response.

    `body` is the decoded Status object when the server sent one; a text or bytes body (proxies,
    load balancers, the 503 of a restarting apiserver) becomes the message. The Status `reason`
    wins over the HTTP code when both are known, because a 409 can be AlreadyExists or Conflict.
    """
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    if isinstance(body, Mapping):
        code = body.get("code")
        if isinstance(code, int) and code >= 400:
            status = code
        reason = str(body.get("reason") or _REASON_FOR_STATUS.get(status, "Unknown"))
        message = str(body.get("message") or reason)
        details = body.get("details")
        details = details if isinstance(details, Mapping) else None
    else:
        reason = _REASON_FOR_STATUS.get(status, "Unknown")
        message = (body or "").strip() or reason
        details = None
    if retry_after_s is None and details is not None:
        seconds = details.get("retryAfterSeconds")
        if isinstance(seconds, int | float) and seconds > 0:
            retry_after_s = float(seconds)
    cls = _BY_REASON.get(reason) or _BY_STATUS.get(status)
    if cls is None:
        cls = InternalError if status >= 500 else ApiError
    return cls(
        status=status, reason=reason, message=message, details=details, retry_after_s=retry_after_s
    )
