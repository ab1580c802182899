"""Breaking-change detection between two generated CRD schemas (Q-02..Q-05)."""

from __future__ import annotations

from typing import Any

import pytest

from kro.graph.compat import compare, compare_crds


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema


S = {"type": "string"}
INT = {"type": "integer"}

BREAKING = [
    ("property removed", _obj({"a": S, "b": S}), _obj({"a": S}), "Property b was removed"),
    ("type changed", _obj({"a": S}), _obj({"a": INT}), "Type changed from string to integer"),
    ("required added", _obj({"a": S}), _obj({"a": S}, ["a"]), "Field a is newly required"),
    ("required property added", _obj({}), _obj({"a": S}, ["a"]), "Required property a was added"),
    (
        "enum restricted",
        _obj({"a": {**S, "enum": ["x", "y"]}}),
        _obj({"a": {**S, "enum": ["x"]}}),
        'Enum value "y" was removed',
    ),
    (
        "pattern added",
        _obj({"a": S}),
        _obj({"a": {**S, "pattern": "^a$"}}),
        "Validation pattern ^a$ was added",
    ),
    (
        "minimum added",
        _obj({"a": INT}),
        _obj({"a": {**INT, "minimum": 1}}),
        "Minimum constraint 1 was added",
    ),
    (
        "maximum lowered",
        _obj({"a": {**INT, "maximum": 9}}),
        _obj({"a": {**INT, "maximum": 5}}),
        "Maximum constraint changed from 9 to 5",
    ),
    (
        "items removed",
        _obj({"a": {"type": "array", "items": S}}),
        _obj({"a": {"type": "array"}}),
        "Array items schema of a was removed",
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "description"), [b[1:] for b in BREAKING], ids=[b[0] for b in BREAKING]
)
def test_breaking_changes_are_reported(old: Any, new: Any, description: str) -> None:
    report = compare(old, new)
    assert description in [c.description for c in report.breaking]


NON_BREAKING = [
    ("optional property added", _obj({}), _obj({"a": S})),
    ("required with default added", _obj({}), _obj({"a": {**S, "default": "x"}}, ["a"])),
    ("required removed", _obj({"a": S}, ["a"]), _obj({"a": S})),
    ("enum expanded", _obj({"a": {**S, "enum": ["x"]}}), _obj({"a": {**S, "enum": ["x", "y"]}})),
    ("pattern removed", _obj({"a": {**S, "pattern": "^a$"}}), _obj({"a": S})),
    ("maximum raised", _obj({"a": {**INT, "maximum": 5}}), _obj({"a": {**INT, "maximum": 9}})),
    (
        "description changed",
        _obj({"a": {**S, "description": "x"}}),
        _obj({"a": {**S, "description": "y"}}),
    ),
    (
        "validation rule added",
        _obj({"a": S}),
        _obj({"a": {**S, "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}),
    ),
]


@pytest.mark.parametrize(
    ("old", "new"), [b[1:] for b in NON_BREAKING], ids=[b[0] for b in NON_BREAKING]
)
def test_non_breaking_changes_are_changes_but_not_breaking(old: Any, new: Any) -> None:
    report = compare(old, new)
    assert report.has_changes()
    assert report.breaking == []


def test_identical_schemas_have_no_changes() -> None:
    schema = _obj({"a": {**S, "default": "x"}, "b": {"type": "array", "items": INT}}, ["a"])
    assert not compare(schema, schema).has_changes()


def test_summary_lists_three_and_counts_the_rest() -> None:
    old = _obj({n: S for n in "abcde"})
    report = compare(old, _obj({}))
    assert report.summary() == (
        "Property a was removed; Property b was removed; Property c was removed; and 2 more changes"
    )


def _crd(version: str, schema: dict[str, Any], status: bool = True) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": schema},
    }
    if status:
        entry["subresources"] = {"status": {}}
    return {"spec": {"names": {"kind": "A", "plural": "as"}, "versions": [entry]}}


def test_version_rename_and_status_subresource_removal_are_breaking() -> None:
    report = compare_crds(_crd("v1", _obj({})), _crd("v2", _obj({}), status=False))
    assert {c.kind for c in report.breaking} == {"VERSION_CHANGED", "SUBRESOURCE_REMOVED"}
