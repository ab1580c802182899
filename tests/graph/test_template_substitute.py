"""Putting evaluated values back into a copy of a template (C-02, C-03, C-31)."""

import copy
from typing import Any

import pytest

from kro.graph.errors import FieldPathError, SubstitutionError
from kro.graph.template import FieldPath, extract_fields, substitute

OMIT = object()

TEMPLATE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "${schema.spec.name}-svc", "labels": {"tier": "${tier}"}},
    "spec": {
        "selector": "${deployment.spec.selector.matchLabels}",
        "ports": [{"port": "${port}", "name": "http"}, {"port": 443, "name": "${extra}"}],
    },
}


def test_standalone_values_keep_their_type_and_templates_render() -> None:  # C-02, C-03
    values = {
        "metadata.name": ["web"],
        "metadata.labels.tier": "frontend",
        "spec.selector": {"app": "web"},
        "spec.ports[0].port": 8080,
        "spec.ports[1].name": None,
    }
    assert substitute(TEMPLATE, values) == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web-svc", "labels": {"tier": "frontend"}},
        "spec": {
            "selector": {"app": "web"},
            "ports": [{"port": 8080, "name": "http"}, {"port": 443, "name": None}],
        },
    }


def test_template_is_never_mutated() -> None:
    before = copy.deepcopy(TEMPLATE)
    result = substitute(TEMPLATE, {"spec.selector": {"app": "x"}})
    result["spec"]["selector"]["app"] = "changed"
    result["spec"]["ports"][0]["name"] = "changed"
    assert before == TEMPLATE


def test_string_template_accepts_the_rendered_string() -> None:  # C-03 as one CEL expression
    result = substitute(TEMPLATE, {"metadata.name": "web-svc"})
    assert result["metadata"]["name"] == "web-svc"


def test_unlisted_fields_stay_as_written() -> None:
    result = substitute(TEMPLATE, {"spec.ports[0].port": 80})
    assert result["metadata"]["name"] == "${schema.spec.name}-svc"


def test_keys_accept_field_paths_and_descriptors_round_trip() -> None:
    fields = extract_fields(TEMPLATE)
    values: dict[FieldPath, Any] = {
        f.path: (f"<{f.expressions[0]}>" if f.standalone else ["X"] * len(f.expressions))
        for f in fields
    }
    result = substitute(TEMPLATE, values)
    assert result["metadata"]["name"] == "X-svc"
    assert result["spec"]["ports"][0]["port"] == "<port>"


def test_root_path_replaces_a_standalone_scalar() -> None:
    assert substitute("${x}", {"": [1, 2]}) == [1, 2]


def test_omit_removes_map_keys_and_shrinks_lists() -> None:  # C-31
    template = {
        "a": "${x}",
        "b": "keep",
        "list": ["${i0}", "${i1}", "lit", "${i3}"],
        "objs": [{"v": "${o0}"}, {"v": "${o1}"}],
    }
    values = {
        "a": OMIT,
        "list[1]": OMIT,
        "list[3]": OMIT,
        "list[0]": "zero",
        "objs[0].v": OMIT,
        "objs[1].v": 1,
    }
    assert substitute(template, values, omit=OMIT) == {
        "b": "keep",
        "list": ["zero", "lit"],
        "objs": [{}, {"v": 1}],
    }


def test_without_an_omit_sentinel_values_are_plain() -> None:
    assert substitute({"a": "${x}"}, {"a": OMIT}) == {"a": OMIT}


@pytest.mark.parametrize(
    ("values", "error", "message"),
    [
        pytest.param(
            {"spec.missing": 1},
            FieldPathError,
            "field path spec.missing not found in template (no spec.missing)",
            id="unknown key",
        ),
        pytest.param(
            {"spec.ports[5].port": 1},
            FieldPathError,
            "field path spec.ports[5].port not found in template (no spec.ports[5])",
            id="index out of range",
        ),
        pytest.param(
            {"spec.ports.port": 1},
            FieldPathError,
            "field path spec.ports.port not found in template (no spec.ports.port)",
            id="key into a list",
        ),
        pytest.param(
            {"kind[0]": 1},
            FieldPathError,
            "field path kind[0] not found in template (no kind[0])",
            id="index into a string",
        ),
        pytest.param(
            {"kind": "Pod"}, SubstitutionError, "field kind holds no expression", id="literal"
        ),
        pytest.param(
            {"spec.ports[1].port": 1},
            SubstitutionError,
            "field spec.ports[1].port is not a templated string",
            id="non-string",
        ),
        pytest.param(
            {"metadata.name": 5},
            SubstitutionError,
            "string template at metadata.name needs a string or one string per expression, got int",
            id="N-23 scalar for template",
        ),
        pytest.param(
            {"metadata.name": [5]},
            SubstitutionError,
            'string template expression "schema.spec.name" evaluated to int, expected string',
            id="N-23 non-string part",
        ),
        pytest.param(
            {"metadata.name": ["a", "b"]},
            SubstitutionError,
            "template has 1 expressions, got 2 values",
            id="wrong number of parts",
        ),
        pytest.param(
            {"metadata.name": OMIT},
            SubstitutionError,
            "omit() can only be the whole value of a field, not part of a string template",
            id="C-31 omit in string template",
        ),
        pytest.param(
            {"spec..x": 1},
            FieldPathError,
            'invalid field path "spec..x": empty field name at offset 5',
            id="malformed path text",
        ),
    ],
)
def test_values_that_do_not_fit_are_rejected(
    values: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info:
        substitute(TEMPLATE, values, omit=OMIT)
    assert str(info.value) == message


def test_errors_carry_the_field_path() -> None:
    with pytest.raises(SubstitutionError) as info:
        substitute(TEMPLATE, {"metadata.name": [5]})
    assert info.value.field_path == "metadata.name"


def test_omitting_the_root_is_rejected() -> None:
    with pytest.raises(SubstitutionError, match="whole object"):
        substitute("${x}", {"": OMIT}, omit=OMIT)
