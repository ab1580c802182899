"""Typed objects: validated on read (a malformed object is a TerminalError naming the field),
serialised for apply with camelCase names and only the fields that were set."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import Field

from kro.runtime.gvk import GVK, GVR
from kro.runtime.reconcile import TerminalError
from kro.runtime.typed import InvalidObject, KubeModel, ObjectMeta, WireModel, as_dict


class Spec(WireModel):
    image: str
    replicas: int = Field(1, ge=0, le=10)
    pull_policy: str | None = None


class Website(KubeModel):
    gvk = GVK("example.com", "v1", "Website")
    gvr = GVR("example.com", "v1", "websites")
    spec: Spec


def raw(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Website",
        "metadata": {"name": "w", "namespace": "ns", "resourceVersion": "7", "uid": "u"},
        "spec": spec,
        "status": {"phase": "Ready"},
    }


def test_a_read_validates_and_keeps_what_it_does_not_model() -> None:
    site = Website.from_object(raw(image="nginx", pullPolicy="Always"))
    assert (site.name, site.namespace) == ("w", "ns")
    assert site.metadata.resource_version == "7"
    assert site.spec.pull_policy == "Always"
    assert site.spec.replicas == 1
    assert site.to_dict() == raw(image="nginx", pullPolicy="Always")  # a lossless round trip


def test_an_invalid_object_is_terminal_and_names_the_field() -> None:
    with pytest.raises(InvalidObject) as caught:
        Website.from_object(raw(image="nginx", replicas=50))
    assert isinstance(caught.value, TerminalError)
    assert "Website ns/w is invalid: spec.replicas: Input should be less than or equal to 10" in (
        str(caught.value)
    )
    assert caught.value.errors[0]["loc"] == ("spec", "replicas")


def test_objects_built_in_python_serialise_only_what_was_set() -> None:
    site = Website(
        metadata=ObjectMeta(name="w", namespace="ns", labels={"a": "b"}), spec=Spec(image="x")
    )
    assert site.to_dict() == {
        "apiVersion": "example.com/v1",
        "kind": "Website",
        "metadata": {"name": "w", "namespace": "ns", "labels": {"a": "b"}},
        "spec": {"image": "x"},
    }
    assert as_dict(site) == site.to_dict()
    assert as_dict({"a": 1}) == {"a": 1}


def test_wire_names_and_python_names_are_both_accepted() -> None:
    assert Spec.model_validate({"image": "x", "pull_policy": "Never"}).pull_policy == "Never"
    assert Spec.model_validate({"image": "x", "pullPolicy": "Never"}).pull_policy == "Never"
