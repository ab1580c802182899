"""The shape of `spec.schema.status` (T-01, T-05, K-01, C-07)."""

from typing import Any

import pytest

from kro.graph.errors import (
    NestedExpressionError,
    NotStandaloneError,
    StatusShapeError,
    UnterminatedExpressionError,
)
from kro.graph.simpleschema import walk_status
from kro.graph.template import substitute


def summary(status: Any) -> list[tuple[str, tuple[str, ...], bool]]:
    return [(str(f.path), f.expressions, f.standalone) for f in walk_status(status).fields]


def test_projected_fields_are_listed_in_document_order() -> None:
    status = {
        "availableReplicas": "${deployment.status.availableReplicas}",
        "endpoint": "http://${service.spec.clusterIP}:${service.spec.ports[0].port}",
        "nested": {"ip": "${service.spec.clusterIP}"},
        "endpoints": ["${a.status.x}", "${b.status.x}"],  # T-01 arrays are allowed
        "state": "${deployment.status.phase}",  # T-05: walked like any field
    }
    assert summary(status) == [
        ("status.availableReplicas", ("deployment.status.availableReplicas",), True),
        (
            "status.endpoint",
            ("service.spec.clusterIP", "service.spec.ports[0].port"),
            False,
        ),
        ("status.nested.ip", ("service.spec.clusterIP",), True),
        ("status.endpoints[0]", ("a.status.x",), True),
        ("status.endpoints[1]", ("b.status.x",), True),
        ("status.state", ("deployment.status.phase",), True),
    ]


def test_no_status_section_is_empty() -> None:
    section = walk_status(None)
    assert section.fields == ()
    assert section.conditions is None


def test_literal_leaves_are_all_reported() -> None:  # T-01, reference §6 #1
    status = {
        "ok": "${a.status.x}",
        "protocol": "TCP",
        "nested": {"port": 80, "flag": None},
        "list": ["${b}", True],
    }
    with pytest.raises(StatusShapeError) as info:
        walk_status(status)
    paths = ("status.protocol", "status.nested.port", "status.nested.flag", "status.list[1]")
    assert str(info.value) == (
        "status fields without expressions are not supported: [" + " ".join(paths) + "]"
    )
    assert info.value.paths == paths


def test_an_unterminated_expression_names_the_status_field() -> None:  # V-06
    with pytest.raises(UnterminatedExpressionError) as info:
        walk_status({"name": "${schema.spec.name"})
    assert info.value.field_path == "status.name"


def test_empty_containers_contribute_nothing() -> None:
    assert walk_status({"a": {}, "b": []}).fields == ()


def test_nested_expression_in_status_names_the_field() -> None:
    with pytest.raises(NestedExpressionError) as info:
        walk_status({"x": "${a(${b})}"})
    assert info.value.field_path == "status.x"


def test_conditions_block_is_extracted() -> None:  # K-01
    section = walk_status(
        {
            "conditions": [
                '${runtime.newCondition({type: "DBReady", status: "True"})}',
                "${pods.map(p, runtime.newCondition({type: p.metadata.name, status: 'True'}))}",
            ],
            "ip": "${svc.spec.clusterIP}",
        }
    )
    assert section.conditions == (
        'runtime.newCondition({type: "DBReady", status: "True"})',
        "pods.map(p, runtime.newCondition({type: p.metadata.name, status: 'True'}))",
    )
    assert [str(f.path) for f in section.fields] == ["status.ip"]


def test_empty_conditions_block_still_replaces_builtins() -> None:  # K-04
    assert walk_status({"conditions": []}).conditions == ()


def test_nested_conditions_key_is_an_ordinary_field() -> None:
    section = walk_status({"db": {"conditions": "${db.status.conditions}"}})
    assert section.conditions is None
    assert [str(f.path) for f in section.fields] == ["status.db.conditions"]


@pytest.mark.parametrize(
    ("conditions", "message", "path"),
    [
        pytest.param(
            "${x}",
            "status.conditions must be a list, got string",
            "status.conditions",
            id="K-01 not a list",
        ),
        pytest.param(
            {"a": "${x}"},
            "status.conditions must be a list, got map[string]interface {}",
            "status.conditions",
            id="K-01 map",
        ),
        pytest.param(
            ["${x}", 3],
            "status.conditions[1] must be a CEL expression string, got float64",
            "status.conditions[1]",
            id="K-01 number entry",
        ),
        pytest.param(
            [{"type": "Ready"}],
            "status.conditions[0] must be a CEL expression string, got map[string]interface {}",
            "status.conditions[0]",
            id="K-01 literal condition",
        ),
    ],
)
def test_malformed_conditions_block(conditions: Any, message: str, path: str) -> None:
    with pytest.raises(StatusShapeError) as info:
        walk_status({"conditions": conditions})
    assert str(info.value) == message
    assert info.value.field_path == path


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param("Ready", id="C-07 no expression"),
        pytest.param("${a} ${b}", id="C-07 two expressions"),
        pytest.param("x-${a}", id="C-07 string template"),
        pytest.param("${a}\n", id="C-07 block scalar newline"),
    ],
)
def test_condition_entries_must_be_standalone(entry: str) -> None:
    with pytest.raises(NotStandaloneError) as info:
        walk_status({"conditions": ["${ok}", entry]})
    assert str(info.value) == "only standalone expressions are allowed"
    assert info.value.field_path == "status.conditions[1]"


def test_status_not_a_map_is_unexpected() -> None:
    with pytest.raises(StatusShapeError, match=r"^unexpected type: \[\]interface \{\}$"):
        walk_status(["${a}"])


def test_status_values_substitute_under_a_status_wrapper() -> None:
    status = {"ip": "${svc.spec.clusterIP}", "url": "http://${svc.spec.clusterIP}/"}
    section = walk_status(status)
    values = {section.fields[0].path: "10.0.0.1", section.fields[1].path: ["10.0.0.1"]}
    assert substitute({"status": status}, values) == {
        "status": {"ip": "10.0.0.1", "url": "http://10.0.0.1/"}
    }
