"""Property tests: the SimpleSchema parsers never crash, and their invariants hold."""

from collections.abc import Callable
from typing import Any, TypeVar

from hypothesis import given, settings
from hypothesis import strategies as st

from kro.graph.errors import GraphError, MarkerError, SchemaError, TypeSyntaxError
from kro.graph.simpleschema import (
    MarkerKey,
    parse_markers,
    parse_type,
    re2_syntax_error,
    to_openapi_spec,
    walk_status,
)
from kro.graph.template import walk_leaves

T = TypeVar("T")


def attempt(
    fn: Callable[..., T], *args: Any, error: type[GraphError] = GraphError
) -> T | GraphError:
    """Run fn; return its result, or the project error it raised (anything else propagates)."""
    try:
        return fn(*args)
    except error as err:
        return err


# Text biased towards the characters the grammars care about.
GRAMMAR_CHARS = list('[]{}map|="\\ ,string integer float boolean object required default')
grammar_text = st.text(alphabet=st.sampled_from(GRAMMAR_CHARS) | st.characters(), max_size=60)

MARKER_KEYS = [k.value for k in MarkerKey]
marker_section = st.lists(
    st.tuples(
        st.sampled_from([*MARKER_KEYS, "bogus"]),
        st.sampled_from(
            ["true", "false", "1", "x", "[1]", '{"a": 1}', '"q w"', "a,b", "", "map", "set"]
        ),
    ),
    max_size=4,
).map(lambda pairs: " ".join(f"{k}={v}" for k, v in pairs))

type_text = st.recursive(
    st.sampled_from(["string", "integer", "boolean", "float", "object", "Person", "Port", "int"]),
    lambda inner: inner.map(lambda t: "[]" + t) | inner.map(lambda t: "map[string]" + t),
    max_leaves=20,
)
leaf_text = st.one_of(
    grammar_text,
    type_text,
    st.builds(lambda t, m: f"{t} | {m}", type_text, marker_section),
)
json_scalar = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
schema_tree = st.recursive(
    leaf_text | json_scalar,
    lambda inner: (
        st.dictionaries(st.text(max_size=8), inner, max_size=4) | st.lists(inner, max_size=3)
    ),
    max_leaves=25,
)


@given(grammar_text)
def test_parse_type_never_crashes(text: str) -> None:
    result = attempt(parse_type, text, error=TypeSyntaxError)
    assert not isinstance(result, GraphError) or str(result)


@given(grammar_text | marker_section)
def test_parse_markers_never_crashes(text: str) -> None:
    result = attempt(parse_markers, text, error=MarkerError)
    assert str(result) if isinstance(result, GraphError) else result


@given(leaf_text)
def test_any_leaf_either_builds_or_raises_a_schema_error(text: str) -> None:
    types = {"Person": {"name": "string"}, "Port": "integer"}
    result = attempt(to_openapi_spec, {"f": text}, types, error=SchemaError)
    if isinstance(result, GraphError):
        assert str(result)
        assert result.field_path is not None
    else:
        assert result["properties"]["f"]["type"] in {
            "string",
            "integer",
            "boolean",
            "number",
            "object",
            "array",
        }


@settings(max_examples=200)
@given(schema_tree, st.none() | st.dictionaries(st.sampled_from(["A", "B", "Person"]), schema_tree))
def test_any_tree_either_builds_or_raises_a_schema_error(spec: Any, types: Any) -> None:
    result = attempt(to_openapi_spec, spec, types, error=SchemaError)
    assert not isinstance(result, GraphError) or str(result)


@given(schema_tree)
def test_walk_status_never_crashes(status: Any) -> None:
    result = attempt(walk_status, status)  # StatusShapeError, or a TemplateError from a leaf
    assert not isinstance(result, GraphError) or str(result)


@given(st.text(max_size=40))
def test_quoted_marker_values_round_trip(value: str) -> None:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    (marker,) = parse_markers(f'description="{escaped}"')
    assert marker.value == value


@given(
    st.dictionaries(
        st.text(alphabet="abcdefghXYZ", min_size=1, max_size=5),
        st.sampled_from(
            [
                "string",
                "integer | default=1",
                "string | required=true",
                "boolean | required=false default=true",
                "[]string",
            ]
        ),
        max_size=6,
    )
)
def test_required_and_auto_default_invariants(spec: dict[str, str]) -> None:  # S-10, S-11
    schema = to_openapi_spec(spec)
    required = schema.get("required", [])
    assert required == sorted(set(required))
    assert set(required) == {k for k, v in spec.items() if "required=true" in v}
    has_child_default = any("default=" in v for v in spec.values())
    assert ("default" in schema) == (has_child_default and not required)


@given(grammar_text | st.text(alphabet=st.sampled_from(list("()[]{}|*+?\\^$.-:,<>=!PpQEx0123a"))))
def test_re2_check_never_crashes(pattern: str) -> None:
    result = re2_syntax_error(pattern)
    assert result is None or result.startswith("error parsing regexp: ")


# A grammar of patterns Go always accepts.
re2_atom = st.sampled_from(
    ["a", "b", ".", r"\d", r"\w", r"\.", r"\x41", "[a-z]", "[^0-9_]", r"\pL", "[[:alpha:]]"]
)
re2_pattern = st.recursive(
    re2_atom,
    lambda inner: st.one_of(
        st.tuples(inner, inner).map("".join),
        st.tuples(inner, inner).map("|".join),
        inner.map(lambda p: f"({p})"),
        inner.map(lambda p: f"(?:{p})"),
        inner.map(lambda p: f"(?P<g>{p})"),
        st.tuples(inner, st.sampled_from(["*", "+", "?", "*?", "{2}", "{1,3}", "{2,}"])).map(
            lambda t: f"({t[0]}){t[1]}"
        ),
    ),
    max_leaves=12,
)


@given(re2_pattern)
def test_well_formed_patterns_are_accepted(pattern: str) -> None:
    assert re2_syntax_error(pattern) is None


@given(schema_tree)
def test_leaf_walk_covers_every_scalar(tree: Any) -> None:
    leaves = list(walk_leaves(tree))
    assert all(not isinstance(v, dict | list) for _, v in leaves)
