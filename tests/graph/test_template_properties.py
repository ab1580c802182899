"""Property tests: the `${...}` scanner, walker and substitution never crash and round-trip."""

import itertools
from collections.abc import Callable
from typing import Any, TypeVar

from hypothesis import given
from hypothesis import strategies as st

from kro.graph.errors import FieldPathError, GraphError, TemplateError
from kro.graph.template import (
    ExpressionPart,
    FieldPath,
    TextPart,
    extract_fields,
    go_quote,
    go_unquote,
    is_standalone,
    parse_template,
    substitute,
)

# Text biased towards the characters the scanner cares about.
TEMPLATE_CHARS = list("${}\"'\\ ab.()")
# codec="utf-8": lone surrogates cannot arrive through JSON/YAML (go_quote maps them to U+FFFD).
any_char = st.characters(codec="utf-8")
template_text = st.text(alphabet=st.sampled_from(TEMPLATE_CHARS) | any_char, max_size=50)
json_tree = st.recursive(
    template_text | st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False),
    lambda inner: (
        st.dictionaries(st.text(max_size=6), inner, max_size=4) | st.lists(inner, max_size=4)
    ),
    max_leaves=20,
)
T = TypeVar("T")


def attempt(
    fn: Callable[..., T], *args: Any, error: type[GraphError] = GraphError
) -> T | GraphError:
    """Run fn; return its result, or the project error it raised (anything else propagates)."""
    try:
        return fn(*args)
    except error as err:
        return err


segment = st.text(max_size=8) | st.integers(min_value=0, max_value=10**6)


def reassemble(parts: tuple[TextPart | ExpressionPart, ...]) -> str:
    return "".join(p.text if isinstance(p, TextPart) else "${" + p.source + "}" for p in parts)


@given(template_text)
def test_parse_template_never_crashes_and_round_trips(text: str) -> None:
    tmpl = attempt(parse_template, text, error=TemplateError)
    if isinstance(tmpl, GraphError):
        assert str(tmpl)
        return
    assert reassemble(tmpl.parts) == text
    assert all(p.text for p in tmpl.parts if isinstance(p, TextPart))
    # literal parts never merge: two text parts are never adjacent
    kinds = [type(p) for p in tmpl.parts]
    assert all(not (a is b is TextPart) for a, b in itertools.pairwise(kinds))


@given(template_text)
def test_is_standalone_never_raises(text: str) -> None:
    assert is_standalone(text) in (True, False)


@given(template_text)
def test_cel_source_quotes_literals_losslessly(text: str) -> None:
    try:
        tmpl = parse_template(text)
    except TemplateError:
        return
    source = tmpl.cel_source()
    assert isinstance(source, str)
    for part in tmpl.parts:
        if isinstance(part, TextPart):
            assert go_unquote(go_quote(part.text)) == part.text


@given(json_tree)
def test_extract_fields_points_at_the_original_strings(tree: Any) -> None:
    fields = attempt(extract_fields, tree, error=TemplateError)
    if isinstance(fields, GraphError):
        assert fields.field_path is not None
        return
    for field in fields:
        node = tree
        for seg in field.path.segments:
            node = node[seg]
        assert node == field.text


@given(json_tree)
def test_substituting_the_expressions_back_restores_the_template(tree: Any) -> None:
    try:
        fields = extract_fields(tree)
    except TemplateError:
        return
    values = {
        f.path: f.text if f.standalone else ["${" + e + "}" for e in f.expressions] for f in fields
    }
    assert substitute(tree, values) == tree


@given(st.lists(segment, max_size=6))
def test_field_path_text_round_trips(segments: list[str | int]) -> None:
    path = FieldPath(tuple(segments))
    assert FieldPath.parse(str(path)) == path


@given(st.text(alphabet=st.sampled_from(list('ab.[]"\\0129x')) | st.characters(), max_size=30))
def test_field_path_parse_never_crashes(text: str) -> None:
    result = attempt(FieldPath.parse, text, error=FieldPathError)
    assert not isinstance(result, GraphError) or str(result).startswith("invalid field path ")


@given(st.text(alphabet=any_char))
def test_go_quote_round_trips(text: str) -> None:
    assert go_unquote(go_quote(text)) == text
