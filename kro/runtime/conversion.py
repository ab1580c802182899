"""kro.runtime.conversion: a CRD's conversion webhook as a function of one object.

A CRD that serves two versions stores one and converts between them; when the schemas differ
beyond a rename of the version, the API server asks a webhook (`spec.conversion.strategy:
Webhook`) with a ConversionReview (apiextensions.k8s.io/v1; v1beta1 when a CRD asks for it,
answered in kind) holding a batch of objects and the `desiredAPIVersion`. The handler sees one
object at a time:

    def convert(obj: dict, api_version: str) -> dict | None:      # or async def
        if api_version == "example.kro.run/v2":                    # v1 -> v2
            obj["spec"]["size"] = {"replicas": obj["spec"].pop("replicas", 1)}
        else:                                                      # v2 -> v1
            obj["spec"]["replicas"] = obj["spec"].pop("size", {}).get("replicas", 1)
        return obj                                                 # or None: changed in place

It is handed a copy (change it freely) and its result gets `apiVersion` set to the version
asked for. The API server allows a conversion to change nothing in metadata but labels and
annotations, and every version must round-trip: v1 -> v2 -> v1 must give back what was stored,
or an update through the other version loses fields (keep what one version cannot say in an
annotation).

There is no failure policy for conversion: a handler that raises, or runs past the request's
deadline (the API server allows conversion webhooks 30 s), fails the whole batch (`result:
Failure` with the message), and the client's read or write fails with it. Objects already at the
desired version are passed through untouched; a batch holding a kind with no handler fails.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import structlog

from .admission import BadReview, decode_review
from .gvk import split_api_version

__all__ = [
    "REVIEW_VERSIONS",
    "ConversionRequest",
    "ConversionResponse",
    "Converter",
    "convert",
    "decode_conversion",
]

log = structlog.get_logger(__name__)

REVIEW_VERSIONS = ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1")
Converter = Callable[
    [dict[str, Any], str], Awaitable[dict[str, Any] | None] | dict[str, Any] | None
]


class _NoConverter(Exception):
    """The batch holds a kind this server converts nothing for."""


@dataclass(frozen=True, slots=True)
class ConversionRequest:
    """A batch to convert: every object to `desired_api_version`."""

    uid: str
    desired_api_version: str
    objects: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class ConversionResponse:
    """The converted objects, in the order asked, or why none were."""

    uid: str
    converted: tuple[dict[str, Any], ...] = ()
    failure: str | None = None

    def review(self, api_version: str = REVIEW_VERSIONS[0]) -> dict[str, Any]:
        response: dict[str, Any] = {"uid": self.uid}
        if self.failure is None:
            response["convertedObjects"] = list(self.converted)
            response["result"] = {"status": "Success"}
        else:
            response["convertedObjects"] = []
            response["result"] = {"status": "Failure", "message": self.failure}
        return {"apiVersion": api_version, "kind": "ConversionReview", "response": response}


def decode_conversion(body: bytes) -> tuple[str, ConversionRequest]:
    """(apiVersion, request) of a ConversionReview body; BadReview when it is not one."""
    api_version, raw = decode_review(body, "ConversionReview", REVIEW_VERSIONS)
    desired, objects = raw.get("desiredAPIVersion"), raw.get("objects")
    if not isinstance(desired, str) or not desired:
        raise BadReview("the ConversionReview names no desiredAPIVersion")
    if not isinstance(objects, list) or not all(isinstance(o, dict) for o in objects):
        raise BadReview("the ConversionReview's objects are not a list of objects")
    return api_version, ConversionRequest(str(raw["uid"]), desired, tuple(objects))


def kind_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(group, kind) of an object: what a conversion handler is registered for."""
    group, _ = split_api_version(str(obj.get("apiVersion", "")))
    return group, str(obj.get("kind", ""))


async def convert(
    request: ConversionRequest,
    converters: Mapping[tuple[str, str], Converter],
    *,
    deadline_s: float,
) -> ConversionResponse:
    """Convert every object of `request` with the handler of its kind (module doc)."""
    desired = request.desired_api_version
    converted: list[dict[str, Any]] = []
    try:
        async with asyncio.timeout(deadline_s) as deadline:
            for obj in request.objects:
                converted.append(await _convert_one(obj, desired, converters))
    except TimeoutError as e:
        message = (
            f"the conversion to {desired} did not finish within {deadline_s:g}s"
            if deadline.expired()
            else f"{type(e).__name__}: {e}"
        )
        log.error("webhook.conversion_failed", desired=desired, error=message)
        return ConversionResponse(request.uid, failure=message)
    except _NoConverter as e:
        log.error("webhook.conversion_failed", desired=desired, error=str(e))
        return ConversionResponse(request.uid, failure=str(e))
    except Exception as e:
        log.error("webhook.conversion_failed", desired=desired, error=str(e), exc_info=e)
        return ConversionResponse(request.uid, failure=f"{type(e).__name__}: {e}")
    return ConversionResponse(request.uid, tuple(converted))


async def _convert_one(
    obj: dict[str, Any], desired: str, converters: Mapping[tuple[str, str], Converter]
) -> dict[str, Any]:
    if obj.get("apiVersion") == desired:
        return obj
    group, kind = kind_key(obj)
    converter = converters.get((group, kind))
    if converter is None:
        raise _NoConverter(f"no conversion is registered for {kind}.{group}")
    copy: dict[str, Any] = orjson.loads(orjson.dumps(obj))
    result = converter(copy, desired)
    if inspect.isawaitable(result):
        result = await result
    out = copy if result is None else result
    if not isinstance(out, dict):
        raise TypeError(f"the conversion of {kind}.{group} returned {type(out).__name__}")
    out["apiVersion"] = desired
    return out
