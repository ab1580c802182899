"""kro.graph.schema_validation and schema_rules: what the API server says about a value that
does not fit a CRD's structural schema, word for word."""

from __future__ import annotations

from typing import Any

import pytest

from kro.graph.schema_rules import rule_compile_errors, rule_errors, validate_with_rules
from kro.graph.schema_validation import unknown_fields, validate_value

SPEC: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
        "replicas": {"type": "integer", "minimum": 1.0, "maximum": 10.0},
        "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0, "multipleOf": 0.5},
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "tags": {"type": "array", "maxItems": 2, "minItems": 1, "x-kubernetes-list-type": "set",
                 "items": {"type": "string"}},
        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "properties": {"name": {"type": "string"},
                                                             "port": {"type": "integer"}}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "port": {"x-kubernetes-int-or-string": True},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "optional": {"type": "string", "nullable": True},
    },
}  # fmt: skip


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"replicas": "three"},
         'spec.replicas: Invalid value: "string": spec.replicas in body must be of type '
         'integer: "string"'),
        ({}, "spec.name: Required value"),
        ({"name": "a"}, 'spec.name: Invalid value: "a": spec.name in body should be at least 2 '
                        "chars long"),
        ({"name": "abcdef"}, "spec.name: Too long: may not be more than 5 bytes"),
        ({"name": "AB"},
         "spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"),
        ({"replicas": 0}, "spec.replicas: Invalid value: 0: spec.replicas in body should be "
                          "greater than or equal to 1"),
        ({"replicas": 11}, "spec.replicas in body should be less than or equal to 10"),
        ({"replicas": 2.5}, 'spec.replicas: Invalid value: "number": spec.replicas in body must '
                            'be of type integer: "number"'),
        ({"replicas": True}, 'must be of type integer: "boolean"'),
        ({"ratio": 0}, "spec.ratio in body should be greater than 0"),
        ({"ratio": 0.7}, "spec.ratio in body should be a multiple of 0.5"),
        ({"mode": "medium"}, 'spec.mode: Unsupported value: "medium": supported values: "fast", '
                             '"slow"'),
        ({"tags": ["a", "b", "c"]}, "spec.tags: Too many: 3: must have at most 2 items"),
        ({"tags": []},
         "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"),
        ({"tags": ["a", "a"]}, 'spec.tags[1]: Duplicate value: "a"'),
        ({"ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}]},
         'spec.ports[1]: Duplicate value: {"name": "a"}'),
        ({"labels": {"a": 1}}, 'spec.labels.a: Invalid value: "integer": spec.labels.a in body '
                               'must be of type string: "integer"'),
        ({"port": 1.5}, 'must be of type integer or string: "number"'),
        ({"extra": 1}, 'unknown field "spec.extra"'),
        ({"ports": [{"nam": "a"}]}, 'unknown field "spec.ports[0].nam"'),
    ],
    ids=["type", "required", "min-length", "max-length", "pattern", "minimum", "maximum",
         "float-for-integer", "bool-for-integer", "exclusive-minimum", "multiple-of", "enum",
         "max-items", "min-items", "set-duplicate", "map-duplicate", "additional-properties",
         "int-or-string", "unknown-field", "unknown-nested-field"],
)  # fmt: skip
def test_api_server_messages(value: dict[str, Any], message: str) -> None:
    value = {"name": "ok", **value}
    if message == "spec.name: Required value":
        value.pop("name")
    errors = [str(e) for e in validate_value(SPEC, value, "spec")]
    assert any(message in e for e in errors), errors


@pytest.mark.parametrize(
    "value",
    [
        {"name": "ok"},
        {"name": "ok", "port": "http", "optional": None, "free": {"anything": {"goes": 1}}},
        {"name": "ok", "replicas": 1, "ratio": 1.5, "tags": ["a", "b"], "labels": {"a": "b"}},
        {"name": "ok", "port": 8080, "mode": "slow", "replicas": None},
    ],
    ids=["minimal", "open-and-nullable", "bounds", "int-or-string-int"],
)
def test_valid_values_have_no_errors(value: dict[str, Any]) -> None:
    assert validate_value(SPEC, value, "spec") == []


def test_unknown_fields_are_pruned_silently_unless_strict() -> None:
    assert validate_value(SPEC, {"name": "ok", "x": 1}, "spec", reject_unknown=False) == []


def test_unknown_fields_skips_what_the_caller_says() -> None:
    value = {"name": "${a}", "${key}": 1, "nope": {"deeper": 1}}
    assert unknown_fields(SPEC, value, "spec", skip=lambda v: isinstance(v, str) and "${" in v) == [
        "spec.nope"
    ]


RULED: dict[str, Any] = {
    "type": "object",
    "properties": {
        "replicas": {"type": "integer",
                     "x-kubernetes-validations": [{"rule": "self % 2 == 1", "message": "odd"}]},
        "min": {"type": "integer"},
        "max": {"type": "integer"},
        "name": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]},
    },
    "x-kubernetes-validations": [
        {"rule": "!has(self.min) || !has(self.max) || self.min <= self.max",
         "messageExpression": "'min ' + string(self.min) + ' > max ' + string(self.max)",
         "fieldPath": ".min"},
        {"rule": "has(self.replicas)", "reason": "FieldValueRequired"},
    ],
}  # fmt: skip


def test_rules_fail_with_their_message_path_and_reason() -> None:
    errors = [str(e) for e in rule_errors(RULED, {"replicas": 2, "min": 3, "max": 1}, "spec")]
    assert errors == [
        'spec.min: Invalid value: "object": min 3 > max 1',
        'spec.replicas: Invalid value: "integer": odd',
    ]
    assert [str(e) for e in rule_errors(RULED, {}, "spec")] == [
        "spec: Required value: failed rule: has(self.replicas)"
    ]


def test_transition_rules_are_skipped_on_create() -> None:
    assert rule_errors(RULED, {"replicas": 1, "name": "x"}, "spec") == []


def test_rules_do_not_run_on_ill_typed_values() -> None:
    errors = [str(e) for e in validate_with_rules(RULED, {"replicas": "two"}, "spec")]
    assert errors[-1] == (
        '<nil>: Invalid value: "null": some validation rules were not checked because the object '
        "was invalid; correct the existing errors to complete validation"
    )


def test_rules_that_do_not_compile_are_found() -> None:
    rules = [{"rule": "self.foo > 1"}, {"rule": "self > 0"}]
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer", "x-kubernetes-validations": rules}},
    }
    (problem,) = rule_compile_errors(schema, "spec")
    assert (problem.path, problem.index, problem.rule) == ("spec.a", 0, "self.foo > 1")
    assert str(problem).startswith('spec.a: x-kubernetes-validations[0]: rule "self.foo > 1" does')
