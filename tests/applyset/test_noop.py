"""The no-op proof of kro.applyset.cache: only our own Apply entry, the same field set and the
same values let an apply be skipped; anything it cannot prove means apply."""

from __future__ import annotations

from typing import Any

from kro.applyset.cache import already_applied

BODY = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "a", "namespace": "ns", "labels": {"app": "a"}},
    "data": {"k": "v"},
    "spec": {"ports": [{"port": 80}]},
}


def _live(
    fields: dict[str, Any] | None = None, manager: str = "kro", **override: Any
) -> dict[str, Any]:
    owned = fields or {
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:data": {".": {}, "f:k": {}},
        "f:spec": {"f:ports": {'k:{"port":80}': {".": {}, "f:port": {}}}},
    }
    live: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "a",
            "namespace": "ns",
            "uid": "u",
            "labels": {"app": "a", "other": "x"},
            "managedFields": [
                {"manager": manager, "operation": "Apply", "fieldsV1": owned},
                {"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:x": {}}},
            ],
        },
        "data": {"k": "v"},
        "spec": {"ports": [{"port": 80, "protocol": "TCP"}]},
    }
    live.update(override)
    return live


def test_our_fields_with_our_values_are_proven_applied() -> None:
    assert already_applied(_live(), BODY, "kro")


def test_a_changed_value_a_list_of_another_length_or_another_type_is_not() -> None:
    assert not already_applied(_live(data={"k": "w"}), BODY, "kro")
    two = {"ports": [{"port": 80}, {"port": 81}]}
    assert not already_applied(_live(spec=two), BODY, "kro")
    assert not already_applied(_live(data={"k": 1}), {**BODY, "data": {"k": "1"}}, "kro")


def test_a_field_we_own_but_no_longer_want_is_not() -> None:
    fields = {
        "f:metadata": {"f:labels": {"f:app": {}, "f:gone": {}}},
        "f:data": {"f:k": {}},
        "f:spec": {"f:ports": {}},
    }
    assert not already_applied(_live(fields), BODY, "kro")


def test_without_our_apply_entry_nothing_is_proven() -> None:
    assert not already_applied(_live(manager="someone"), BODY, "kro")
    bare = _live()
    del bare["metadata"]["managedFields"]
    assert not already_applied(bare, BODY, "kro")


def test_an_atomic_map_is_owned_whole_and_must_be_equal() -> None:
    body = {**BODY, "spec": {"selector": {"app": "a"}}}
    fields = {
        "f:metadata": {"f:labels": {"f:app": {}}},
        "f:data": {"f:k": {}},
        "f:spec": {"f:selector": {}},
    }
    assert already_applied(_live(fields, spec={"selector": {"app": "a"}}), body, "kro")
    extra = {"selector": {"app": "a", "tier": "x"}}
    assert not already_applied(_live(fields, spec=extra), body, "kro")
