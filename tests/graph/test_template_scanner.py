"""`${...}` extraction: C-01..C-07 and N-22, N-23 (reference §1.D, §5)."""

import pytest

from kro.graph import template
from kro.graph.errors import (
    NestedExpressionError,
    NotStandaloneError,
    SubstitutionError,
    UnterminatedExpressionError,
)
from kro.graph.template import (
    ExpressionPart,
    TextPart,
    is_standalone,
    parse_standalone,
    parse_template,
)

E = ExpressionPart
T = TextPart


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        pytest.param("plain", [T("plain")], id="no expression"),
        pytest.param("", [], id="empty string"),
        pytest.param("${schema.spec.name}", [E("schema.spec.name")], id="C-02 standalone"),
        pytest.param("${ schema.spec.name }", [E(" schema.spec.name ")], id="C-02 whitespace kept"),
        pytest.param(
            "${schema.spec.name}-svc",
            [E("schema.spec.name"), T("-svc")],
            id="C-03 suffix literal",
        ),
        pytest.param(
            "http://${a}:${b}/",
            [T("http://"), E("a"), T(":"), E("b"), T("/")],
            id="C-03 several expressions",
        ),
        pytest.param("${a}${b}", [E("a"), E("b")], id="C-03 adjacent expressions"),
        pytest.param('${c ? {} : {"a": 1}}', [E('c ? {} : {"a": 1}')], id="C-01 map literals nest"),
        pytest.param('${x.map(k, {"k": k})}', [E('x.map(k, {"k": k})')], id="C-01 braces in macro"),
        pytest.param('${"}"}', [E('"}"')], id="C-01 brace inside double quotes"),
        pytest.param('${"{"}', [E('"{"')], id="C-01 open brace inside double quotes"),
        pytest.param('${"a\\"}b"}', [E('"a\\"}b"')], id="C-01 escaped quote inside double quotes"),
        pytest.param(
            '${"a\\\\"}x', [E('"a\\\\"'), T("x")], id="C-01 escaped backslash ends string"
        ),
        pytest.param(
            "${'}'}", [E("'"), T("'}")], id="C-01 single quotes are not string delimiters"
        ),
        pytest.param('${"${VAR}"}', [E('"${VAR}"')], id="C-06 escape for literal ${"),
        pytest.param(
            'echo ${"${HOME}"}/bin', [T("echo "), E('"${HOME}"'), T("/bin")], id="C-06 in text"
        ),
        pytest.param('${outer("${inner}")}', [E('outer("${inner}")')], id="C-04 quoted inner"),
        pytest.param("$VAR $(cmd)", [T("$VAR $(cmd)")], id="C-06 plain $ needs no escape"),
        pytest.param("$${a}", [T("$"), E("a")], id="dollar before expression"),
        pytest.param("${a}}", [E("a"), T("}")], id="stray closing brace is literal"),
        pytest.param("{${a}}", [T("{"), E("a"), T("}")], id="braces around expression"),
        pytest.param("${}", [E("")], id="empty expression is left to CEL"),
        pytest.param("${a}\n", [E("a"), T("\n")], id="C-07 trailing newline"),
    ],
)
def test_string_splits_into_parts(text: str, parts: list[TextPart | ExpressionPart]) -> None:
    tmpl = parse_template(text)
    assert list(tmpl.parts) == parts
    assert tmpl.text == text


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("${outer(${inner})}", id="C-04 nested"),
        pytest.param("${incomplete ${complete}", id="C-04 nested inside unterminated"),
        pytest.param('${"a ${b}"}', id="C-04 inner not right after a quote"),
        pytest.param("x ${a + ${b}}", id="C-04 nested in template"),
        pytest.param("${${a}}", id="C-04 immediately nested"),
    ],
)
def test_nested_expression_is_rejected(text: str) -> None:
    with pytest.raises(NestedExpressionError) as info:
        parse_template(text)
    assert str(info.value) == "nested expressions are not allowed unless inside string literals"
    assert info.value.expression == text


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        pytest.param("${incomplete", '"${incomplete"', id="V-06 alone"),
        pytest.param("${schema.spec.name", '"${schema.spec.name"', id="V-06 was C-05's example"),
        pytest.param("${a} ${b", '"${b"', id="V-06 after a complete expression"),
        pytest.param("x-${a", '"${a"', id="V-06 after literal text"),
        pytest.param('${"abc', '"${\\"abc"', id="V-06 unterminated string literal"),
        pytest.param("${f({a: 1}", '"${f({a: 1}"', id="V-06 braces counted"),
    ],
)
def test_unterminated_expression_is_an_error(text: str, fragment: str) -> None:
    """V-06: upstream v0.10 refuses a `${` that nothing closes (v0.9 kept it as text)."""
    with pytest.raises(UnterminatedExpressionError) as info:
        parse_template(text)
    assert str(info.value) == f'unterminated expression {fragment}: missing closing "}}"'
    assert info.value.expression == text


def test_an_unterminated_expression_is_quoted_up_to_80_characters() -> None:
    text = "${" + "a" * 200
    with pytest.raises(UnterminatedExpressionError) as info:
        parse_template(text)
    assert str(info.value) == f'unterminated expression "{text[:80]}...": missing closing "}}"'


@pytest.mark.parametrize(
    ("text", "standalone"),
    [
        pytest.param("${a}", True, id="C-02 one expression"),
        pytest.param("${a.b[0]}", True, id="C-02 complex"),
        pytest.param(" ${a}", False, id="C-03 leading space"),
        pytest.param("${a}\n", False, id="C-07 block scalar newline"),
        pytest.param("${a}${b}", False, id="C-03 two expressions"),
        pytest.param("a", False, id="literal"),
        pytest.param("", False, id="empty"),
        pytest.param("${a", False, id="unterminated"),
        pytest.param("${a(${b})}", False, id="nested is not standalone"),
    ],
)
def test_is_standalone(text: str, standalone: bool) -> None:
    assert is_standalone(text) is standalone


def test_parse_standalone_returns_the_expression() -> None:  # C-07
    assert parse_standalone("${deployment.status.ready == 1}") == "deployment.status.ready == 1"


@pytest.mark.parametrize("text", ["ready", "${a} && ${b}", "${a}\n", ""])
def test_parse_standalone_rejects_everything_else(text: str) -> None:  # C-07
    with pytest.raises(NotStandaloneError, match=r"^only standalone expressions are allowed$"):
        parse_standalone(text)


@pytest.mark.parametrize(
    ("text", "source"),
    [
        pytest.param("${a.b}", "a.b", id="C-02 standalone is the expression"),
        pytest.param("${a}-svc", '(a) + "-svc"', id="C-03 suffix"),
        pytest.param(
            'pre "q" ${a} \\ ${b}',
            '"pre \\"q\\" " + (a) + " \\\\ " + (b)',
            id="C-03 literals are Go-quoted",
        ),
        pytest.param("x\n${a}\t", '"x\\n" + (a) + "\\t"', id="C-03 control characters"),
        pytest.param("${a}${b}", "(a) + (b)", id="C-03 adjacent"),
        pytest.param("${a // c}-x", '(a // c\n) + "-x"', id="comment cannot eat the paren"),
        pytest.param("plain", '"plain"', id="literal only"),
        pytest.param("", '""', id="empty"),
    ],
)
def test_cel_source(text: str, source: str) -> None:
    assert parse_template(text).cel_source() == source


def test_render_splices_values_between_literals() -> None:
    tmpl = parse_template("http://${a}:${b}/x")
    assert tmpl.render(["svc", "80"]) == "http://svc:80/x"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param(["svc"], "template has 2 expressions, got 1 values", id="too few"),
        pytest.param("svc80", "template has 2 expressions, got 1 values", id="bare string"),
        pytest.param(
            ["svc", 80],
            'string template expression "b" evaluated to int, expected string',
            id="N-23 non-string part",
        ),
    ],
)
def test_render_rejects_values_that_do_not_fit(values: object, message: str) -> None:
    with pytest.raises(SubstitutionError) as info:
        parse_template("http://${a}:${b}/").render(values)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_public_names_are_exported() -> None:
    for name in template.__all__:
        assert hasattr(template, name)
    assert len(set(template.__all__)) == len(template.__all__)


def test_errors_keep_the_innermost_context() -> None:
    err = NestedExpressionError("m", expression="${a(${b})}", field_path="spec.x")
    same = err.with_context(rgd="web", resource_id="svc", field_path="other", expression="e")
    assert same is err
    assert (err.rgd, err.resource_id, err.field_path, err.expression) == (
        "web",
        "svc",
        "spec.x",
        "${a(${b})}",
    )
    assert str(err) == "m"
