"""kro.graph.selectors: is a value a Kubernetes label selector (`metav1.LabelSelector`)?

Since v0.10 an externalRef's `metadata.selector` is schemaless (V-12): a literal selector, or
one `${...}` expression that yields one (`selector: ${schema.spec.selector}`). Admission no
longer checks its shape, so kro must, and it must never read a wrong shape as "no
requirements": a misspelled `matchLabel`, a bare label map `{tier: db}` or a string would
otherwise select every object of the kind. `selector_problem` says what is wrong; the
graph build asks it about literal selectors, and the evaluation about every rendered one
(kro.graph.evaluate), which fails the reference with a message naming the expression.

The rules are the API server's for a selector in a request: only the two fields, string
label values, the four operators, values exactly when the operator needs them, and label
keys and values of valid syntax (so the LIST that follows cannot be refused for its selector).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

FIELDS: Final = ("matchLabels", "matchExpressions")
OPERATORS_WITH_VALUES: Final = frozenset({"In", "NotIn"})
OPERATORS_WITHOUT_VALUES: Final = frozenset({"Exists", "DoesNotExist"})
_REQUIREMENT_FIELDS: Final = ("key", "operator", "values")
# The API server's label syntax. kro.dynamic checks the same when it parses a selector, but
# kro.graph may not import it (nor kro.api.v1alpha1, which kro.engine must not reach).
_NAME: Final = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN: Final = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_NAME_MAX: Final = 63
_PREFIX_MAX: Final = 253


_JSON_KINDS: Final = (
    (bool, "boolean"),
    ((int, float), "number"),
    (str, "string"),
    ((list, tuple), "list"),
    (Mapping, "map"),
)


def json_kind(value: Any) -> str:
    """The JSON type of a decoded value, as a person reads it in a message."""
    if value is None:
        return "null"
    for types, name in _JSON_KINDS:
        if isinstance(value, types):
            return name
    return type(value).__name__


def selector_problem(value: Any, *, templated: bool = False) -> str | None:
    """Why `value` is not a label selector, or None when it is one.

    templated: `value` is a literal from an RGD whose strings may still hold `${...}`: such a
    string stands for whatever it renders to and is judged once rendered.
    """
    if templated and _is_template(value):
        return None
    if not isinstance(value, Mapping):
        return (
            "expected a label selector (a map with matchLabels and/or matchExpressions), "
            f"got {json_kind(value)}"
        )
    for key in value:
        if key not in FIELDS:
            return (
                f'unknown field "{key}": a label selector has only matchLabels and matchExpressions'
            )
    return _labels_problem(value.get("matchLabels"), templated) or _expressions_problem(
        value.get("matchExpressions"), templated
    )


def _labels_problem(labels: Any, templated: bool) -> str | None:
    if labels is None or (templated and _is_template(labels)):
        return None
    if not isinstance(labels, Mapping):
        return f"matchLabels must be a map of label values, got {json_kind(labels)}"
    for key, label in labels.items():
        where = f'matchLabels["{key}"]'
        problem = _key_problem(key, where)
        if problem is None and not (templated and _is_template(label)):
            problem = _value_problem(label, where)
        if problem is not None:
            return problem
    return None


def _expressions_problem(expressions: Any, templated: bool) -> str | None:
    if expressions is None or (templated and _is_template(expressions)):
        return None
    if not isinstance(expressions, (list, tuple)):
        return f"matchExpressions must be a list, got {json_kind(expressions)}"
    for index, requirement in enumerate(expressions):
        problem = _requirement_problem(requirement, f"matchExpressions[{index}]", templated)
        if problem is not None:
            return problem
    return None


def _requirement_problem(requirement: Any, where: str, templated: bool) -> str | None:
    if templated and _is_template(requirement):
        return None
    if not isinstance(requirement, Mapping):
        return f"{where} must be a map with key, operator and values, got {json_kind(requirement)}"
    for field in requirement:
        if field not in _REQUIREMENT_FIELDS:
            return f'{where}: unknown field "{field}" (a requirement has key, operator, values)'
    key, operator, values = (requirement.get(f) for f in _REQUIREMENT_FIELDS)
    problem = None if templated and _is_template(key) else _key_problem(key, f"{where}.key")
    if problem is not None or (templated and (_is_template(operator) or _is_template(values))):
        return problem
    return _operator_problem(operator, values, where) or _values_problem(values, where, templated)


def _values_problem(values: Any, where: str, templated: bool) -> str | None:
    for position, item in enumerate(values or ()):
        if templated and _is_template(item):
            continue
        problem = _value_problem(item, f"{where}.values[{position}]")
        if problem is not None:
            return problem
    return None


def _operator_problem(operator: Any, values: Any, where: str) -> str | None:
    """The operator is known, and has values exactly when it needs them."""
    if operator not in OPERATORS_WITH_VALUES | OPERATORS_WITHOUT_VALUES:
        return f"{where}.operator must be one of In, NotIn, Exists, DoesNotExist, got {operator!r}"
    if values is not None and not isinstance(values, (list, tuple)):
        return f"{where}.values must be a list of strings, got {json_kind(values)}"
    if operator in OPERATORS_WITH_VALUES and not values:
        return f"{where}: operator {operator} needs at least one value"
    if operator in OPERATORS_WITHOUT_VALUES and values:
        return f"{where}: operator {operator} takes no values"
    return None


def _key_problem(key: Any, where: str) -> str | None:
    """A label key: an optional DNS subdomain prefix and `/`, then a name of 63 at most."""
    if not isinstance(key, str):
        return f"{where}: a label key must be a string, got {json_kind(key)}"
    prefix, slash, name = key.rpartition("/")
    if slash and (len(prefix) > _PREFIX_MAX or not _DNS_SUBDOMAIN.match(prefix)):
        return f'{where}: label key "{key}" has an invalid prefix (a DNS subdomain)'
    if len(name) > _NAME_MAX or not _NAME.match(name):
        return (
            f'{where}: invalid label key "{key}" (at most 63 alphanumeric characters, "-", "_" '
            'or ".", starting and ending with an alphanumeric one, after an optional prefix/)'
        )
    return None


def _value_problem(label: Any, where: str) -> str | None:
    if not isinstance(label, str):
        return f"{where}: a label value must be a string, got {json_kind(label)}"
    if label and (len(label) > _NAME_MAX or not _NAME.match(label)):
        return (
            f'{where}: invalid label value "{label}" (empty, or at most 63 alphanumeric '
            'characters, "-", "_" or ".", starting and ending with an alphanumeric one)'
        )
    return None


def _is_template(value: Any) -> bool:
    return isinstance(value, str) and "${" in value
