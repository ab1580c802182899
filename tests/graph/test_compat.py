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


# -- v0.10 (V-11): the default comparison refuses more; the ConservativeCRDComparison gate more
# still. Expected classifications are the spec's: breaking ones need the allow annotation.

ARRAY = {"type": "array", "items": S}
MAP_OF_STRINGS = {"type": "object", "additionalProperties": S}
FREE = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}

V010_BREAKING_BY_DEFAULT = [
    ("enum added", _obj({"a": S}), _obj({"a": {**S, "enum": ["x"]}}), "ENUM_ADDED"),
    (
        "enum narrowed",
        _obj({"a": {**S, "enum": ["x", "y"]}}),
        _obj({"a": {**S, "enum": ["x"]}}),
        "ENUM_RESTRICTED",
    ),
    ("nullable removed", _obj({"a": {**S, "nullable": True}}), _obj({"a": S}), "NULLABLE_REMOVED"),
    (
        "preserve-unknown removed",
        _obj({"a": FREE}),
        _obj({"a": {"type": "object"}}),
        "PRESERVE_UNKNOWN_FIELDS_REMOVED",
    ),
]


@pytest.mark.parametrize("conservative", [False, True], ids=["gate-off", "gate-on"])
@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [b[1:] for b in V010_BREAKING_BY_DEFAULT],
    ids=[b[0] for b in V010_BREAKING_BY_DEFAULT],
)
def test_v010_default_breaking_classes(old: Any, new: Any, kind: str, conservative: bool) -> None:
    report = compare(old, new, conservative=conservative)
    assert [(c.path, c.kind) for c in report.breaking] == [("a", kind)]


V010_HARMLESS_BY_DEFAULT = [
    ("enum removed", _obj({"a": {**S, "enum": ["x"]}}), _obj({"a": S})),
    ("nullable added", _obj({"a": S}), _obj({"a": {**S, "nullable": True}})),
    ("preserve-unknown added", _obj({"a": {"type": "object"}}), _obj({"a": FREE})),
]


@pytest.mark.parametrize("conservative", [False, True], ids=["gate-off", "gate-on"])
@pytest.mark.parametrize(
    ("old", "new"),
    [b[1:] for b in V010_HARMLESS_BY_DEFAULT],
    ids=[b[0] for b in V010_HARMLESS_BY_DEFAULT],
)
def test_v010_relaxations_are_applied_but_not_breaking(
    old: Any, new: Any, conservative: bool
) -> None:
    report = compare(old, new, conservative=conservative)
    assert report.has_changes()
    assert report.breaking == []


def _rules(*rules: dict[str, str]) -> dict[str, Any]:
    return {**S, "x-kubernetes-validations": list(rules)}


RULE = {"rule": "self.size() < 10", "message": "too long"}

# (name, old, new): breaking only with the gate on; with it off the change is still applied.
GATED = [
    ("map value schema retyped", _obj({"a": MAP_OF_STRINGS}),
     _obj({"a": {"type": "object", "additionalProperties": INT}})),
    ("map value property removed",
     _obj({"a": {"type": "object", "additionalProperties": _obj({"x": S, "y": S})}}),
     _obj({"a": {"type": "object", "additionalProperties": _obj({"x": S})}})),
    ("map values dropped", _obj({"a": MAP_OF_STRINGS}), _obj({"a": {"type": "object"}})),
    ("format added", _obj({"a": S}), _obj({"a": {**S, "format": "date-time"}})),
    ("format changed", _obj({"a": {**S, "format": "date"}}),
     _obj({"a": {**S, "format": "date-time"}})),
    ("list type changed", _obj({"a": {**ARRAY, "x-kubernetes-list-type": "atomic"}}),
     _obj({"a": {**ARRAY, "x-kubernetes-list-type": "set"}})),
    ("list type set where none was", _obj({"a": ARRAY}),
     _obj({"a": {**ARRAY, "x-kubernetes-list-type": "set"}})),
    ("list map keys changed",
     _obj({"a": {"type": "array", "items": _obj({"k": S, "j": S}, ["k", "j"]),
                 "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"]}}),
     _obj({"a": {"type": "array", "items": _obj({"k": S, "j": S}, ["k", "j"]),
                 "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k", "j"]}})),
    ("map type changed", _obj({"a": MAP_OF_STRINGS}),
     _obj({"a": {**MAP_OF_STRINGS, "x-kubernetes-map-type": "atomic"}})),
    ("validation rule added", _obj({"a": S}), _obj({"a": _rules(RULE)})),
    ("validation rule changed", _obj({"a": _rules(RULE)}),
     _obj({"a": _rules({**RULE, "rule": "self.size() < 5"})})),
    ("int-or-string dropped", _obj({"a": {"x-kubernetes-int-or-string": True}}),
     _obj({"a": {"x-kubernetes-int-or-string": False}})),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new"), [g[1:] for g in GATED], ids=[g[0] for g in GATED])
def test_gated_classes_are_breaking_only_with_the_gate(old: Any, new: Any) -> None:
    assert compare(old, new, conservative=True).breaking
    relaxed = compare(old, new)
    assert relaxed.has_changes()
    assert relaxed.breaking == []


GATED_HARMLESS = [
    ("format removed", _obj({"a": {**S, "format": "date"}}), _obj({"a": S})),
    ("validation rule removed", _obj({"a": _rules(RULE)}), _obj({"a": S})),
    ("validation message changed", _obj({"a": _rules(RULE)}),
     _obj({"a": _rules({**RULE, "message": "keep it short"})})),
    ("map value widened", _obj({"a": {"type": "object", "additionalProperties": _obj({"x": S})}}),
     _obj({"a": {"type": "object", "additionalProperties": _obj({"x": S, "y": S})}})),
]  # fmt: skip


@pytest.mark.parametrize(
    ("old", "new"), [g[1:] for g in GATED_HARMLESS], ids=[g[0] for g in GATED_HARMLESS]
)
def test_gate_on_changes_that_refuse_nothing_stay_harmless(old: Any, new: Any) -> None:
    report = compare(old, new, conservative=True)
    assert report.has_changes()
    assert report.breaking == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (_obj({"a": ARRAY}), _obj({"a": {**ARRAY, "x-kubernetes-list-type": "atomic"}})),
        (_obj({"a": MAP_OF_STRINGS}),
         _obj({"a": {**MAP_OF_STRINGS, "x-kubernetes-map-type": "granular"}})),
        (_obj({"a": {**S, "title": "A"}}), _obj({"a": {**S, "title": "B"}})),
    ],
    ids=["list-type-atomic-is-the-default", "map-type-granular-is-the-default", "title"],
)  # fmt: skip
def test_gate_on_spelling_out_a_default_or_retitling_is_not_breaking(old: Any, new: Any) -> None:
    assert compare(old, new, conservative=True).breaking == []


@pytest.mark.parametrize("conservative", [False, True], ids=["gate-off", "gate-on"])
@pytest.mark.parametrize(
    ("old", "new", "description"), [b[1:] for b in BREAKING], ids=[b[0] for b in BREAKING]
)
def test_v09_breaking_changes_stay_breaking(
    old: Any, new: Any, description: str, conservative: bool
) -> None:
    report = compare(old, new, conservative=conservative)
    assert description in [c.description for c in report.breaking]


def test_a_keyword_without_a_rule_is_breaking_with_the_gate_and_unseen_without() -> None:
    """Q-02: upstream's default comparison does not look at maxProperties at all."""
    old = _obj({"a": MAP_OF_STRINGS})
    new = _obj({"a": {**MAP_OF_STRINGS, "maxProperties": 3}})
    assert [c.kind for c in compare(old, new, conservative=True).breaking] == [
        "UNCLASSIFIED_CHANGE"
    ]
    assert not compare(old, new).has_changes()


def test_the_gate_reaches_the_crd_comparison() -> None:
    old = _crd("v1", _obj({"a": S}))
    new = _crd("v1", _obj({"a": {**S, "format": "date-time"}}))
    assert compare_crds(old, new).breaking == []
    assert [c.kind for c in compare_crds(old, new, conservative=True).breaking] == ["FORMAT_ADDED"]
