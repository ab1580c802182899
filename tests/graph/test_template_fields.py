"""Field paths and the per-field expression list of a resource template (C-02, C-03, C-09)."""

from pathlib import Path
from typing import Any

import pytest
import yaml

from kro.graph.errors import FieldPathError, NestedExpressionError, UnterminatedExpressionError
from kro.graph.template import ROOT, FieldPath, extract_fields, go_quote, go_unquote, walk_leaves

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


# --- FieldPath ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("segments", "text"),
    [
        pytest.param((), "", id="root"),
        pytest.param(("spec",), "spec", id="one key"),
        pytest.param(("spec", "containers", 0, "image"), "spec.containers[0].image", id="index"),
        pytest.param((0, "a"), "[0].a", id="leading index"),
        pytest.param(("a", 1, 2), "a[1][2]", id="consecutive indexes"),
        pytest.param(
            ("metadata", "labels", "app.kubernetes.io/name"),
            'metadata.labels["app.kubernetes.io/name"]',
            id="dotted key is bracketed",
        ),
        pytest.param(("a", "x[0]"), 'a["x[0]"]', id="bracket in key"),
        pytest.param(("a", ""), 'a[""]', id="empty key"),
        pytest.param(("a.b",), '["a.b"]', id="leading dotted key"),
        pytest.param(("a", 'q"uote'), 'a.q"uote', id="quote without dot stays plain"),
        pytest.param(("a", "k.\n"), 'a["k.\\n"]', id="escapes in bracketed key"),
        pytest.param(("kro.run/x", "y"), '["kro.run/x"].y', id="key after bracketed key"),
        pytest.param(("a-b", "c/d"), "a-b.c/d", id="dashes and slashes stay plain"),
    ],
)
def test_field_path_text_round_trips(segments: tuple[str | int, ...], text: str) -> None:
    path = FieldPath(segments)
    assert str(path) == text
    assert FieldPath.parse(text) == path


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(".a", id="leading dot"),
        pytest.param("a.", id="trailing dot"),
        pytest.param("a..b", id="double dot"),
        pytest.param("a[", id="open bracket"),
        pytest.param("a[x]", id="non-numeric index"),
        pytest.param("a[-1]", id="negative index"),
        pytest.param("a[0", id="missing close"),
        pytest.param('a["x', id="unterminated key"),
        pytest.param('a["x"', id="quoted key missing close"),
        pytest.param('a["\\q"]', id="bad escape"),
        pytest.param("a[0]b", id="name without dot after index"),
    ],
)
def test_malformed_field_path_is_rejected(text: str) -> None:
    with pytest.raises(FieldPathError, match=r"^invalid field path "):
        FieldPath.parse(text)


def test_field_path_composes() -> None:
    assert ROOT.child("spec").child(0) == FieldPath(("spec", 0))
    assert FieldPath(("a",)) + FieldPath((1, "b")) == FieldPath(("a", 1, "b"))


@pytest.mark.parametrize("bad", [True, -1, 1.5, None])
def test_field_path_rejects_bad_segments(bad: Any) -> None:
    with pytest.raises((TypeError, ValueError)):
        FieldPath(("a", bad))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain",
        'q"uote',
        "back\\slash",
        "\x00\x07\x1f\x7f",
        "é€😀",
        "\u200b\ufeff",
        "\U000e0001",
    ],
)
def test_go_quote_round_trips(text: str) -> None:
    quoted = go_quote(text)
    assert quoted.startswith('"')
    assert go_unquote(quoted) == text


def test_go_quote_replaces_lone_surrogates_like_go() -> None:
    assert go_quote("a\ud800") == '"a\\ufffd"'


def test_go_quote_matches_strconv_quote() -> None:
    assert go_quote('a"b\\c\nd\x01\x7fé\u200b\U000e0001') == (
        '"a\\"b\\\\c\\nd\\x01\\x7fé\\u200b\\U000e0001"'
    )


# --- walk_leaves / extract_fields ---------------------------------------------------------------


def test_walk_leaves_visits_scalars_in_document_order() -> None:
    obj = {"a": [1, {"b": None}], "c": {}, "d": [], "e": "x"}
    assert [(str(p), v) for p, v in walk_leaves(obj)] == [
        ("a[0]", 1),
        ("a[1].b", None),
        ("e", "x"),
    ]


def test_walk_leaves_of_a_scalar_is_the_scalar() -> None:
    assert list(walk_leaves("x", base=FieldPath(("s",)))) == [(FieldPath(("s",)), "x")]


def test_extract_fields_lists_every_templated_value() -> None:
    resource = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "${schema.spec.name}",
            "labels": {"app.kubernetes.io/name": "${schema.spec.name}-app"},
        },
        "spec": {
            "replicas": "${schema.spec.replicas}",
            "template": {
                "spec": {
                    "containers": [
                        {"name": "web", "image": "${schema.spec.image}", "ports": [{"p": 80}]},
                        {"name": "side", "args": ["--a=${x}", "${y}", "lit"]},
                    ]
                }
            },
        },
    }
    got = [(str(f.path), f.expressions, f.standalone, f.text) for f in extract_fields(resource)]
    assert got == [
        ("metadata.name", ("schema.spec.name",), True, "${schema.spec.name}"),
        (
            'metadata.labels["app.kubernetes.io/name"]',
            ("schema.spec.name",),
            False,
            "${schema.spec.name}-app",
        ),
        ("spec.replicas", ("schema.spec.replicas",), True, "${schema.spec.replicas}"),
        (
            "spec.template.spec.containers[0].image",
            ("schema.spec.image",),
            True,
            "${schema.spec.image}",
        ),
        ("spec.template.spec.containers[1].args[0]", ("x",), False, "--a=${x}"),
        ("spec.template.spec.containers[1].args[1]", ("y",), True, "${y}"),
    ]


def test_structured_path_addresses_the_value() -> None:
    resource = {"spec": {"ports": [{"port": "${p}"}]}}
    (field,) = extract_fields(resource)
    assert field.path.segments == ("spec", "ports", 0, "port")


def test_keys_are_never_templated() -> None:  # C-09
    assert extract_fields({"${a}": "literal", "b": {"${c}": 1}}) == []


def test_an_unterminated_expression_is_refused_with_its_path() -> None:  # V-06
    assert extract_fields({"b": "$x", "c": "$(cmd)"}) == []
    with pytest.raises(UnterminatedExpressionError) as info:
        extract_fields({"b": "$x", "a": ["ok", "${x"]})
    assert info.value.field_path == "a[1]"


def test_base_prefixes_every_path() -> None:
    (field,) = extract_fields({"x": "${a}"}, base=FieldPath(("status",)))
    assert str(field.path) == "status.x"


def test_nested_expression_error_names_the_field() -> None:  # C-04
    with pytest.raises(NestedExpressionError) as info:
        extract_fields({"spec": {"cmd": ["ok", "${f(${g})}"]}})
    assert info.value.field_path == "spec.cmd[1]"
    assert info.value.expression == "${f(${g})}"


def test_field_descriptor_cel_source() -> None:
    (standalone, tmpl) = extract_fields({"a": "${n}", "b": "n-${n}"})
    assert standalone.cel_source() == "n"
    assert tmpl.cel_source() == '"n-" + (n)'


def test_deep_templates_do_not_hit_the_recursion_limit() -> None:
    obj: Any = "${leaf}"
    for _ in range(5000):
        obj = {"n": obj}
    (field,) = extract_fields(obj)
    assert len(field.path.segments) == 5000


@pytest.mark.parametrize(
    "relative",
    sorted(str(p.relative_to(EXAMPLES)) for p in EXAMPLES.rglob("*.yaml")),
)
def test_shared_example_templates_extract(relative: str) -> None:
    with open(EXAMPLES / relative) as handle:
        docs = [d for d in yaml.safe_load_all(handle) if d]
    for doc in docs:
        if doc.get("kind") != "ResourceGraphDefinition":
            continue
        for resource in doc["spec"].get("resources") or []:
            fields = extract_fields(resource.get("template") or resource.get("externalRef"))
            for field in fields:
                assert field.expressions
                assert all("${" not in e for e in field.expressions)
