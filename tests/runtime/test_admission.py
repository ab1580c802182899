"""Admission handlers as the API server sees them: reviews in, verdicts and patches out."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import orjson
import pytest

from kro.runtime.admission import (
    AdmissionRequest,
    BadReview,
    Denied,
    HandlerTimeout,
    admit,
    decode_review,
)
from kro.runtime.gvk import GVK
from kro.runtime.json_patch import apply
from kro.runtime.typed import KubeModel, WireModel


class WidgetSpec(WireModel):
    size: int
    color: str | None = None


class Widget(KubeModel):
    gvk = GVK("example.kro.run", "v1", "Widget")
    spec: WidgetSpec


def widget(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.kro.run/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "ns", "managedFields": [{"manager": "kubectl"}]},
        "spec": {"undeclared": {"kept": True}, **spec},
    }


def request(
    obj: dict[str, Any] | None, old: dict[str, Any] | None = None, operation: str = "CREATE"
) -> dict[str, Any]:
    return {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": "example.kro.run", "version": "v1", "kind": "Widget"},
        "resource": {"group": "example.kro.run", "version": "v1", "resource": "widgets"},
        "name": "w",
        "namespace": "ns",
        "operation": operation,
        "userInfo": {"username": "alice", "groups": ["dev"], "extra": {"scopes": ["a"]}},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
    }


def review(req: dict[str, Any], api_version: str = "admission.k8s.io/v1") -> bytes:
    return orjson.dumps({"apiVersion": api_version, "kind": "AdmissionReview", "request": req})


def patched(obj: dict[str, Any], review_: dict[str, Any]) -> dict[str, Any]:
    response = review_["response"]
    assert response["patchType"] == "JSONPatch"
    ops = orjson.loads(base64.b64decode(response["patch"]))
    result: dict[str, Any] = apply(obj, ops)
    return result


# -- decoding --------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["admission.k8s.io/v1", "admission.k8s.io/v1beta1"])
def test_both_review_versions_decode_and_the_answer_uses_the_question_s(version: str) -> None:
    api_version, raw = decode_review(review(request(widget(size=1)), version))
    assert api_version == version
    assert raw["uid"] == "705ab4f5-6393-11e8-b7cc-42010a800002"


@pytest.mark.parametrize(
    ("body", "complaint"),
    [
        (b"{not json", "not JSON"),
        (b"[1]", "not a JSON object"),
        (b'{"apiVersion": "admission.k8s.io/v2", "kind": "AdmissionReview"}', "expected"),
        (b'{"apiVersion": "admission.k8s.io/v1", "kind": "ConversionReview"}', "expected"),
        (b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}', "uid"),
    ],
)
def test_what_is_not_a_review_is_refused_with_a_reason(body: bytes, complaint: str) -> None:
    with pytest.raises(BadReview, match=complaint):
        decode_review(body)


# -- validating ------------------------------------------------------------------------------------


async def test_a_request_is_decoded_into_typed_fields() -> None:
    seen: list[AdmissionRequest[Any]] = []
    old = widget(size=1)
    await admit(request(widget(size=2), old, "UPDATE"), [seen.append], mutating=False, deadline_s=1)
    (got,) = seen
    assert (got.operation, got.name, got.namespace) == ("UPDATE", "w", "ns")
    assert got.kind == GVK("example.kro.run", "v1", "Widget")
    assert got.resource.resource == "widgets"
    assert got.user_info.username == "alice"
    assert got.user_info.groups == ("dev",)
    assert got.user_info.extra == {"scopes": ("a",)}
    assert got.object["spec"]["size"] == 2
    assert got.old_object == old


async def test_a_handler_that_returns_allows_and_its_warnings_reach_the_client() -> None:
    def check(req: AdmissionRequest[Any]) -> None:
        req.warn("size 3 is deprecated")

    answer = await admit(request(widget(size=3)), [check], mutating=False, deadline_s=1)
    out = answer.review()["response"]
    assert out == {"uid": answer.uid, "allowed": True, "warnings": ["size 3 is deprecated"]}


async def test_denied_refuses_with_its_message_and_code() -> None:
    async def check(req: AdmissionRequest[Widget]) -> None:
        if req.object.spec.size > 10:
            raise Denied("size must be at most 10", code=422, reason="Invalid")

    answer = await admit(
        request(widget(size=11)), [check], mutating=False, model=Widget, deadline_s=1
    )
    status = answer.review()["response"]["status"]
    assert answer.allowed is False
    assert status == {
        "code": 422,
        "message": "size must be at most 10",
        "status": "Failure",
        "reason": "Invalid",
    }


async def test_any_other_error_refuses_with_code_500_and_the_error() -> None:
    def check(req: AdmissionRequest[Any]) -> None:
        raise KeyError("color")

    answer = await admit(request(widget(size=1)), [check], mutating=False, deadline_s=1)
    assert not answer.allowed
    assert answer.code == 500
    assert answer.message == "KeyError: 'color'"


async def test_an_object_that_does_not_fit_its_model_is_refused_with_why() -> None:
    answer = await admit(
        request(widget(size="big")), [lambda r: None], mutating=False, model=Widget, deadline_s=1
    )
    assert (answer.allowed, answer.code) == (False, 422)
    assert "spec.size" in answer.message


async def test_on_delete_the_object_is_the_one_being_deleted() -> None:
    seen: list[Any] = []
    stored = widget(size=4)
    await admit(request(None, stored, "DELETE"), [seen.append], mutating=False, deadline_s=1)
    assert seen[0].object == stored


# -- deadlines -------------------------------------------------------------------------------------


async def test_a_handler_past_its_deadline_gives_no_verdict() -> None:
    async def slow(req: AdmissionRequest[Any]) -> None:
        await asyncio.sleep(10)

    with pytest.raises(HandlerTimeout, match=r"within 0\.05s"):
        await admit(request(widget(size=1)), [slow], mutating=False, deadline_s=0.05)


async def test_a_timeout_of_the_handler_s_own_is_an_error_not_the_deadline() -> None:
    async def calls_something_slow(req: AdmissionRequest[Any]) -> None:
        raise TimeoutError("the database did not answer")

    answer = await admit(
        request(widget(size=1)), [calls_something_slow], mutating=False, deadline_s=5
    )
    assert (answer.allowed, answer.code) == (False, 500)
    assert "database" in answer.message


# -- mutating --------------------------------------------------------------------------------------


async def test_a_defaulter_s_changes_come_back_as_a_patch_of_the_object_as_sent() -> None:
    def fill(req: AdmissionRequest[Any]) -> None:
        req.object["spec"].setdefault("color", "blue")
        req.object["metadata"].setdefault("labels", {})["example.kro.run/size"] = "small"

    sent = widget(size=1)
    answer = await admit(request(sent), [fill], mutating=True, deadline_s=1)
    assert answer.allowed
    result = patched(sent, answer.review())
    assert result["spec"] == {"undeclared": {"kept": True}, "size": 1, "color": "blue"}
    assert result["metadata"]["labels"] == {"example.kro.run/size": "small"}
    assert sent == widget(size=1), "the request's object is not changed"


async def test_a_typed_defaulter_touches_only_what_it_changed() -> None:
    """The model knows neither spec.undeclared nor managedFields: they must stay as sent."""

    def fill(req: AdmissionRequest[Widget]) -> None:
        req.object.spec.color = req.object.spec.color or "blue"
        req.object.spec.size = max(req.object.spec.size, 2)

    sent = widget(size=1)
    answer = await admit(request(sent), [fill], mutating=True, model=Widget, deadline_s=1)
    ops = orjson.loads(base64.b64decode(answer.review()["response"]["patch"]))
    assert sorted(op["path"] for op in ops) == ["/spec/color", "/spec/size"]
    result = patched(sent, answer.review())
    assert result["spec"] == {"undeclared": {"kept": True}, "size": 2, "color": "blue"}
    assert result["metadata"] == sent["metadata"]


async def test_a_defaulter_that_changes_nothing_sends_no_patch() -> None:
    answer = await admit(request(widget(size=1)), [lambda r: None], mutating=True, deadline_s=1)
    assert "patch" not in answer.review()["response"]


async def test_defaulters_run_in_order_on_one_object_and_a_denial_stops_them() -> None:
    calls: list[str] = []

    def first(req: AdmissionRequest[Any]) -> None:
        calls.append("first")
        req.object["spec"]["size"] = 5

    def second(req: AdmissionRequest[Any]) -> None:
        calls.append(f"second saw {req.object['spec']['size']}")
        raise Denied("no")

    def third(req: AdmissionRequest[Any]) -> None:
        calls.append("third")

    answer = await admit(
        request(widget(size=1)), [first, second, third], mutating=True, deadline_s=1
    )
    assert calls == ["first", "second saw 5"]
    assert not answer.allowed
    assert "patch" not in answer.review()["response"]


async def test_a_defaulter_may_replace_the_object_rather_than_change_it() -> None:
    def replace(req: AdmissionRequest[Any]) -> None:
        req.object = {**req.object, "spec": {"size": 7}}

    sent = widget(size=1)
    answer = await admit(request(sent), [replace], mutating=True, deadline_s=1)
    assert patched(sent, answer.review())["spec"] == {"size": 7}


async def test_a_defaulter_that_leaves_a_value_json_cannot_hold_fails_with_why() -> None:
    def bad(req: AdmissionRequest[Any]) -> None:
        req.object["spec"]["tags"] = {"a", "b"}  # a set

    answer = await admit(request(widget(size=1)), [bad], mutating=True, deadline_s=1)
    assert (answer.allowed, answer.code) == (False, 500)
    assert answer.message.startswith("TypeError")
