"""kro.graph.schema_rules: the CEL rules of a structural schema (`x-kubernetes-validations`),
compiled and evaluated as the API server does for a custom resource.

SimpleSchema's `validation=` and `immutable=` markers put such rules into the CRD kro
generates. In a cluster the API server runs them; offline, `kro render` runs them here so an
instance that `kubectl apply` would reject is rejected the same way (`spec.replicas: Invalid
value: "integer": validation failed`), and `kro validate` compiles them, as the API server
does when the CRD is created, so a rule that can never run fails the RGD in CI.

`validate_with_rules` is the whole check, schema then rules. Transition rules (those that
read `oldSelf`) compare an update with the stored object; there
is no stored object offline (every apply is a create), so they are skipped, as the server
skips them on create. Rules do not run on a value with a wrong type or an unsupported enum
value; the server says so with one more error, and so does `validate_with_rules`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kro.cel import (
    CelCompileError,
    CelEnvironment,
    CelError,
    CelOptions,
    CompiledExpression,
    DataPending,
    ExpressionError,
    Value,
)
from kro.graph.schema_validation import (
    ErrorType,
    FieldError,
    child_path,
    item_path,
    json_type,
    property_schema,
    validate_value,
)

RULES: Final = "x-kubernetes-validations"
_OLD_SELF: Final = re.compile(r"\boldSelf\b")
_REASONS: Final = {
    "FieldValueInvalid": ErrorType.INVALID,
    "FieldValueRequired": ErrorType.REQUIRED,
    "FieldValueForbidden": ErrorType.FORBIDDEN,
    "FieldValueDuplicate": ErrorType.DUPLICATE,
}


@dataclass(frozen=True, slots=True)
class RuleProblem:
    """A rule that does not compile: where it is (`path`, `index`) and the checker's message."""

    path: str
    index: int
    rule: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        rule = json.dumps(self.rule)
        return f"{where}{RULES}[{self.index}]: rule {rule} does not compile: {self.message}"


def rule_compile_errors(schema: Mapping[str, Any], path: str = "") -> list[RuleProblem]:
    """Every rule under `schema` that the API server would refuse when creating the CRD."""
    out: list[RuleProblem] = []
    for node_path, node in _schema_nodes(schema, path):
        for index, rule in enumerate(_rules(node)):
            text = str(rule.get("rule", ""))
            if _OLD_SELF.search(text):
                continue
            try:
                _compile(node, text)
            except CelError as err:
                out.append(RuleProblem(node_path, index, text, _message(err)))
    return out


RULES_SKIPPED: Final = FieldError(
    "",
    ErrorType.INVALID,
    "null",
    "some validation rules were not checked because the object was invalid; correct the "
    "existing errors to complete validation",
)
"""What the API server adds instead of rule results when the value has blocking errors."""


def rule_errors(schema: Mapping[str, Any], value: Any, path: str = "") -> list[FieldError]:
    """The failures of every rule under `schema` for `value` (create semantics)."""
    return list(_evaluate_tree(schema, value, path))


def validate_with_rules(
    schema: Mapping[str, Any], value: Any, path: str = "", *, reject_unknown: bool = True
) -> list[FieldError]:
    """Schema errors, then rule failures, as the API server orders and gates them: rules do
    not run on a value with a wrong type or an unsupported enum value."""
    errors = validate_value(schema, value, path, reject_unknown=reject_unknown)
    if any(e.is_blocking for e in errors):
        return [*errors, RULES_SKIPPED] if _has_rules(schema) else errors
    return errors + rule_errors(schema, value, path)


def _has_rules(schema: Mapping[str, Any]) -> bool:
    return any(_rules(node) for _, node in _schema_nodes(schema, ""))


def _evaluate_tree(schema: Mapping[str, Any], value: Any, path: str) -> Iterator[FieldError]:
    if value is None:
        return
    yield from _evaluate_node(schema, value, path)
    if isinstance(value, Mapping):
        for key, sub in value.items():
            sub_schema = property_schema(schema, str(key))
            if sub_schema:
                yield from _evaluate_tree(sub_schema, sub, child_path(path, str(key)))
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for index, sub in enumerate(value):
                yield from _evaluate_tree(items, sub, item_path(path, index))


def _evaluate_node(schema: Mapping[str, Any], value: Any, path: str) -> Iterator[FieldError]:
    for rule in _rules(schema):
        text = str(rule.get("rule", ""))
        if not text or _OLD_SELF.search(text):
            continue
        type_name = str(schema.get("type") or json_type(value))
        where = _rule_path(path, rule.get("fieldPath"))
        try:
            compiled = _compile(schema, text)
        except CelError as err:
            yield FieldError(where, ErrorType.INVALID, type_name, f"rule compile error: {err}")
            continue
        result = compiled.evaluate(_bind(schema, value))
        if isinstance(result, Value) and result.value is True:
            continue
        if isinstance(result, DataPending | ExpressionError):
            detail = f"{result.message} evaluating rule: {text}"
        else:
            detail = _failure_message(schema, value, rule, text)
        kind = _REASONS.get(str(rule.get("reason", "")), ErrorType.INVALID)
        yield FieldError(where, kind, type_name, detail)


def _failure_message(
    schema: Mapping[str, Any], value: Any, rule: Mapping[str, Any], text: str
) -> str:
    expression = rule.get("messageExpression")
    if isinstance(expression, str) and expression:
        try:
            result = _compile(schema, expression).evaluate(_bind(schema, value))
        except CelError:
            result = None
        if isinstance(result, Value) and isinstance(result.value, str) and result.value:
            return result.value
    message = rule.get("message")
    if isinstance(message, str) and message:
        return message
    return f"failed rule: {text}"


def _rule_path(path: str, field_path: Any) -> str:
    if isinstance(field_path, str) and field_path.strip("."):
        return child_path(path, field_path.lstrip("."))
    return path


def _rules(schema: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    rules = schema.get(RULES)
    return [r for r in rules if isinstance(r, Mapping)] if isinstance(rules, list) else []


def _schema_nodes(schema: Mapping[str, Any], path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    yield path, schema
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, sub in properties.items():
            if isinstance(sub, Mapping):
                yield from _schema_nodes(sub, child_path(path, str(name)))
    for key, suffix in (("items", "[*]"), ("additionalProperties", ".*")):
        sub = schema.get(key)
        if isinstance(sub, Mapping):
            yield from _schema_nodes(sub, path + suffix)


def _environment(schema: Mapping[str, Any]) -> CelEnvironment:
    env = CelEnvironment(CelOptions())
    env.declare("self", schema)
    return env


def _compile(schema: Mapping[str, Any], text: str) -> CompiledExpression:
    return _environment(schema).compile(text)


def _bind(schema: Mapping[str, Any], value: Any) -> Any:
    return _environment(schema).bind({"self": value})


def _message(err: CelError) -> str:
    if isinstance(err, CelCompileError):
        return str(err.message)
    return str(err)
