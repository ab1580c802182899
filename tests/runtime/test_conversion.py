"""Conversion handlers as the API server sees them: a ConversionReview in, converted objects or
a failure out."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from kro.runtime.admission import BadReview
from kro.runtime.conversion import ConversionRequest, Converter, convert, decode_conversion

V1, V2 = "example.kro.run/v1", "example.kro.run/v2"


def widget(api_version: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "ns", "uid": "u1"},
        "spec": spec,
    }


def to_v2(obj: dict[str, Any], api_version: str) -> dict[str, Any]:
    if api_version == V2:
        obj["spec"] = {"size": {"replicas": obj["spec"].pop("replicas", 1)}}
    else:
        obj["spec"] = {"replicas": obj["spec"]["size"]["replicas"]}
    return obj


CONVERTERS: dict[tuple[str, str], Converter] = {("example.kro.run", "Widget"): to_v2}


def batch(*objects: dict[str, Any], desired: str = V2) -> ConversionRequest:
    return ConversionRequest("uid-1", desired, tuple(objects))


@pytest.mark.parametrize("version", ["apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1"])
def test_a_conversion_review_decodes(version: str) -> None:
    body = {
        "apiVersion": version,
        "kind": "ConversionReview",
        "request": {"uid": "u", "desiredAPIVersion": V2, "objects": [widget(V1, replicas=2)]},
    }
    api_version, request = decode_conversion(orjson.dumps(body))
    assert api_version == version
    assert request.desired_api_version == V2
    assert request.objects == (widget(V1, replicas=2),)


@pytest.mark.parametrize(
    ("request_", "complaint"),
    [
        ({"uid": "u", "objects": []}, "desiredAPIVersion"),
        ({"uid": "u", "desiredAPIVersion": V2, "objects": [1]}, "list of objects"),
    ],
)
def test_a_malformed_conversion_review_is_refused(request_: Any, complaint: str) -> None:
    body = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": request_,
    }
    with pytest.raises(BadReview, match=complaint):
        decode_conversion(orjson.dumps(body))


async def test_every_object_is_converted_in_order_and_gets_the_desired_version() -> None:
    answer = await convert(
        batch(widget(V1, replicas=2), widget(V1, replicas=3)), CONVERTERS, deadline_s=1
    )
    review = answer.review()
    assert review["kind"] == "ConversionReview"
    assert review["response"]["result"] == {"status": "Success"}
    assert review["response"]["convertedObjects"] == [
        widget(V2, size={"replicas": 2}),
        widget(V2, size={"replicas": 3}),
    ]


async def test_a_handler_may_change_its_copy_in_place_and_return_none() -> None:
    async def in_place(obj: dict[str, Any], api_version: str) -> None:
        obj["metadata"].setdefault("annotations", {})["converted"] = "yes"

    original = widget(V1, replicas=2)
    answer = await convert(batch(original), {("example.kro.run", "Widget"): in_place}, deadline_s=1)
    (converted,) = answer.converted
    assert converted["apiVersion"] == V2
    assert converted["metadata"]["annotations"] == {"converted": "yes"}
    assert "annotations" not in original["metadata"], "the request's objects are not changed"


async def test_objects_already_at_the_desired_version_pass_untouched() -> None:
    def never(obj: dict[str, Any], api_version: str) -> None:
        raise AssertionError("called")

    obj = widget(V2, size={"replicas": 1})
    answer = await convert(batch(obj), {("example.kro.run", "Widget"): never}, deadline_s=1)
    assert answer.converted == (obj,)


async def test_a_failing_handler_fails_the_whole_batch_with_its_message() -> None:
    answer = await convert(batch(widget(V1), widget(V2, size={})), CONVERTERS, deadline_s=1)
    assert answer.failure is None  # the v2 object passes through; the v1 one converts

    answer = await convert(batch(widget(V2, size={}), desired=V1), CONVERTERS, deadline_s=1)
    result = answer.review()["response"]
    assert result["convertedObjects"] == []
    assert result["result"] == {"status": "Failure", "message": "KeyError: 'replicas'"}


async def test_a_kind_without_a_handler_fails_with_its_name() -> None:
    other = {**widget(V1), "kind": "Gadget"}
    answer = await convert(batch(other), CONVERTERS, deadline_s=1)
    assert answer.failure == "no conversion is registered for Gadget.example.kro.run"


async def test_a_slow_handler_fails_the_batch_at_the_deadline() -> None:
    async def slow(obj: dict[str, Any], api_version: str) -> None:
        await asyncio.sleep(10)

    answer = await convert(
        batch(widget(V1)), {("example.kro.run", "Widget"): slow}, deadline_s=0.05
    )
    assert answer.failure == f"the conversion to {V2} did not finish within 0.05s"
