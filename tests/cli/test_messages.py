"""kro.cli.messages: engine diagnostics rewritten for people; one test per pattern matched."""

from __future__ import annotations

import pytest

from kro.cli.messages import one_line, user_message
from kro.graph.build_errors import ResourceBuildError
from kro.graph.resolver import GVK, SchemaNotFoundError


def _checker(expression: str, column: int, message: str) -> str:
    """What the CEL checker writes: position, message, the source and a caret line."""
    caret = "." * (column - 1) + "^"
    return f"ERROR: <input>:1:{column}: {message}\n | {expression}\n | {caret}"


@pytest.mark.parametrize(
    ("expression", "column", "struct", "expected"),
    [
        ("schema.spec.foo", 12, "kro.t1.schema_spec",
         "spec.foo: no such field in the instance schema"),
        ("schema.spec.nested.bar", 19, "kro.t1.schema_spec_nested",
         "spec.nested.bar: no such field in the instance schema"),
        ("deployment.spec.template.spec.foo", 30, "kro.t3.deployment_spec_template_spec",
         'spec.template.spec.foo: no such field in the schema of "deployment"'),
        ("self.foo > 1", 5, "kro.t9.self",
         "self.foo: no such field in the schema the rule applies to"),
        ("a.items[0].foo", 11, "kro.t2.a_items",
         'items[0].foo: no such field in the schema of "a"'),
    ],
    ids=["schema", "nested", "resource", "rule-self", "indexed"],
)  # fmt: skip
def test_undefined_field_becomes_a_field_path(
    expression: str, column: int, struct: str, expected: str
) -> None:
    field = expression[column:].split(" ", 1)[0]
    message = f"undefined field '{field}' not found in struct '{struct}'"
    text = _checker(expression, column, message)
    assert user_message(f"at path x: {text}") == f"at path x: {expected}"


def test_undefined_field_after_a_call_keeps_the_checker_words() -> None:
    text = _checker("f(x).foo", 5, "undefined field 'foo' not found in struct 'kro.t1.schema_spec'")
    assert user_message(text) == (
        "undefined field 'foo' not found in struct 'object (schema.spec)' (at column 5)"
    )


def test_synthetic_type_names_become_object_paths() -> None:
    text = 'returns type "kro.t1.schema_spec_nested" but expected "string"'
    assert user_message(text) == 'returns type "object (schema.spec.nested)" but expected "string"'


def test_other_checker_errors_lose_their_position_prefix_and_snippet() -> None:
    text = _checker("nope + 1", 1, "undeclared reference to 'nope' (in container '')")
    assert user_message(text) == "undeclared reference to 'nope' (in container '') (at column 1)"


def test_a_missing_kind_names_it_and_says_how_to_supply_it() -> None:
    gvk = GVK("example.com", "v1", "Widget")
    try:
        try:
            raise SchemaNotFoundError(gvk)
        except SchemaNotFoundError as cause:
            raise ResourceBuildError(
                f"failed to get schema for resource widget: {cause}", rule="G-07", resource_id="w"
            ) from cause
    except ResourceBuildError as error:
        message = user_message(error)
    assert message == (
        'failed to build resource "w": failed to get schema for resource widget: schema not '
        "found for kind Widget (apiVersion example.com/v1): give its CustomResourceDefinition "
        "with --crd FILE, or read it from a cluster with --kubeconfig FILE"
    )


def test_one_line() -> None:
    assert one_line("first\n  second\n | snippet\n\nthird") == "first second third"
