"""Declarations are translated once and environments with the same ones share a checker
(kro.cel.declarations, the check sets of kro.cel.engine): sharing must never change a result."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from kro.cel import CelCompileError, CelEnvironment, CelType

KIND: dict[str, Any] = {
    "type": "object",
    "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "Widget"}],
    "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
    },
}


def _instance(extra: str | None = None) -> dict[str, Any]:
    properties: dict[str, Any] = {"name": {"type": "string"}}
    if extra:
        properties[extra] = {"type": "integer"}
    return {"type": "object", "properties": {"spec": {"type": "object", "properties": properties}}}


def test_environments_with_the_same_declarations_share_compiled_expressions() -> None:
    first = CelEnvironment(declarations={"schema": _instance(), "w": KIND})
    second = CelEnvironment(declarations={"w": KIND, "schema": _instance()})  # fresh dict
    assert first.compile("w.spec.size + 1") is second.compile("w.spec.size + 1")


def test_different_declarations_do_not_share() -> None:
    typed = CelEnvironment(declarations={"x": CelType("int")})
    other = CelEnvironment(declarations={"x": CelType("string")})
    assert typed.compile("x + 1").output_type.cel_name == "int"
    with pytest.raises(CelCompileError):
        other.compile("x + 1")


def test_a_kind_is_translated_once_for_every_variable_name() -> None:
    env = CelEnvironment(declarations={"a": KIND, "b": KIND})
    assert env.variables["a"] == env.variables["b"]
    assert env.variables["a"].name.endswith(".widget")


def test_lists_of_a_kind_keep_the_variable_named_messages() -> None:
    one = CelEnvironment(declarations={"items": {"type": "array", "items": KIND}})
    two = CelEnvironment(declarations={"items": {"type": "array", "items": KIND}})
    name = one.compile("items[0]").output_type.cel_name
    assert re.fullmatch(r"kro\.t\d+\.items_items", name)
    assert two.compile("items[0]").output_type.cel_name == name


def test_changing_a_schema_after_declaring_it_changes_nothing_declared_before() -> None:
    schema = _instance()
    before = CelEnvironment(declarations={"schema": schema})
    schema["properties"]["spec"]["properties"]["replicas"] = {"type": "integer"}
    after = CelEnvironment(declarations={"schema": schema})
    assert after.compile("schema.spec.replicas").output_type.cel_name == "int"
    with pytest.raises(CelCompileError):
        before.compile("schema.spec.replicas")
    spec_type = before.compile("schema.spec").output_type
    assert spec_type.schema == _instance()["properties"]["spec"]


def test_equal_instance_schemas_share_one_translation() -> None:
    first = CelEnvironment(declarations={"schema": _instance("a")})
    second = CelEnvironment(declarations={"schema": copy.deepcopy(_instance("a"))})
    third = CelEnvironment(declarations={"schema": _instance("b")})
    assert first.variables["schema"].name == second.variables["schema"].name
    assert first.variables["schema"].name != third.variables["schema"].name


def test_extend_compiles_what_does_not_name_the_new_variables_in_the_parent() -> None:
    base = CelEnvironment(declarations={"schema": _instance(), "w": KIND})
    child = base.extend({"tier": CelType("string")})
    assert child.compile("schema.spec.name") is base.compile("schema.spec.name")
    assert child.compile("schema.spec.name + tier").output_type.cel_name == "string"
    with pytest.raises(CelCompileError, match="undeclared reference to 'tier'"):
        base.compile("schema.spec.name + tier")


def test_extend_overriding_a_variable_never_reads_the_parents_type() -> None:
    base = CelEnvironment(declarations={"x": CelType("int"), "y": None})
    child = base.extend({"x": CelType("string")})
    assert base.compile("x + 1").output_type.cel_name == "int"
    with pytest.raises(CelCompileError):
        child.compile("x + 1")
    assert child.compile('x + "a"').output_type.cel_name == "string"
    # A field called like the overridden variable is not the variable.
    assert child.compile("y.x") is base.compile("y.x")


def test_declaring_after_extend_is_seen_by_the_child_only() -> None:
    base = CelEnvironment(declarations={"x": CelType("int")})
    child = base.extend({"i": CelType("int")})
    child.declare("z", CelType("string"))
    with pytest.raises(CelCompileError, match="undeclared reference to 'z'"):
        base.compile("z")
    assert child.compile("z").output_type.cel_name == "string"


@pytest.mark.parametrize(
    "expression",
    [
        "w.spec.size > 0 && tier == 'a'",
        "[tier].map(t, t + schema.spec.name)",
        "cel.bind(x, w.spec, tier + string(x.size))",
        "tier + w.spec.size",
        "tier.foo",
        "tier + nope",
        "tier +",
        "type(tier) == string",
    ],
)
def test_an_extended_environment_checks_like_a_flat_one(expression: str) -> None:
    """Extensions compile in the parent or with only the variables they name: same result."""
    declarations: dict[str, Any] = {"schema": _instance(), "w": KIND}
    child = CelEnvironment(declarations=declarations).extend({"tier": CelType("string")})
    # `u` makes the flat set differ from every set the child uses: nothing is shared.
    flat = CelEnvironment(declarations={**declarations, "tier": CelType("string"), "u": None})
    outcomes: list[tuple[str, object]] = []
    for env in (child, flat):
        try:
            compiled = env.compile(expression)
        except CelCompileError as err:
            outcomes.append(("error", err.message))
        else:
            outcomes.append(("ok", (compiled.output_type, compiled.dependencies)))
    assert outcomes[0] == outcomes[1]


def test_an_extension_with_its_own_descriptors_never_checks_in_the_parent() -> None:
    """A message type name resolves only where its descriptor file is (here: the child)."""
    base = CelEnvironment(declarations={"y": None})
    child = base.extend({"extra": _instance()})
    name = child.compile("extra").output_type.name
    assert child.compile(f"type(y) == {name}").output_type.cel_name == "bool"
    with pytest.raises(CelCompileError, match="undeclared reference"):
        base.compile(f"type(y) == {name}")
