"""`kro validate` warns about expressions whose run-time cost the schema does not bound
(kro.graph.cost): one `warning: ...` line on stderr per finding, naming the RGD, resource,
field path and expression (a Graph document's name as `graph "<name>"`); the RGD stays valid
and the exit code stays 0."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
import yaml

from kro.cli.main import main
from kro.cli.offline import EXIT_OK, VALID_MESSAGE, add_offline_commands


def _rgd(data: dict[str, str], *, spec: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "metadata": {"name": "costly"},
        "spec": {
            "schema": {
                "apiVersion": "v1alpha1",
                "kind": "Costly",
                "spec": spec
                or {
                    "items": "[]string",
                    "small": "[]string | maxItems=10",
                    "groups": "[]object",
                    "n": "integer",
                    "text": "string",
                },
            },
            "resources": [
                {
                    "id": "config",
                    "template": {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "${schema.metadata.name}"},
                        "data": data,
                    },
                }
            ],
        },
    }


def _validate(tmp_path: Path, rgd: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> str:
    path = tmp_path / "rgd.yaml"
    path.write_text(yaml.safe_dump(rgd), encoding="utf-8")
    parser = argparse.ArgumentParser(prog="kro")
    add_offline_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["validate", "-f", str(path)])
    assert args.handler(args) == EXIT_OK
    out, err = capsys.readouterr()
    assert out.strip() == VALID_MESSAGE
    return err


NESTED = "string(schema.spec.items.map(a, schema.spec.items.map(b, a + b)).size())"


def test_nested_comprehension_over_unbounded_lists_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _validate(tmp_path, _rgd({"pairs": "${" + NESTED + "}"}), capsys)
    assert err == (
        f'warning: rgd "costly" resource "config" field "data.pairs": expression "{NESTED}": '
        "nested comprehensions over collections of unbounded size (schema.spec.items): bound "
        "them with maxItems (maxProperties for maps) in the schema; an evaluation stops at its "
        "time budget\n"
    )


def test_seeded_string_with_a_runtime_length_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expression = 'random.seededString(schema.spec.n, "x")'
    err = _validate(tmp_path, _rgd({"password": "${" + expression + "}"}), capsys)
    assert err == (
        f'warning: rgd "costly" resource "config" field "data.password": expression '
        f'"{expression}": random.seededString with a length computed at run time: values '
        "larger than 3MiB fail at evaluation\n"
    )


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        (
            "string(lists.range(400).map(i, lists.range(400).map(j, j)).size())",
            "nested comprehensions may run 160000 iterations (400 x 400)",
        ),
        (
            "string(schema.spec.groups.map(g, g.members.map(m, m)).size())",
            "nested comprehensions over collections of unbounded size "
            "(schema.spec.groups, g.members)",
        ),
        (
            "string(schema.spec.small.map(a, schema.spec.items.map(b, a + b)).size())",
            "nested comprehensions over collections of unbounded size (schema.spec.items)",
        ),
        ("random.seededString(5000000, 'x')", "random.seededString length 5000000 is above"),
        ("string(lists.range(schema.spec.n).size())", "lists.range with a length computed"),
    ],
    ids=["bounded-but-too-many", "through-an-iterator", "one-unbounded-level", "constant", "range"],
)
def test_other_unbounded_costs_warn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], expression: str, reason: str
) -> None:
    spec = {
        "items": "[]string",
        "small": "[]string | maxItems=10",
        "groups": "[]group",
        "n": "integer",
    }
    rgd = _rgd({"value": "${" + expression + "}"}, spec=spec)
    rgd["spec"]["schema"]["types"] = {"group": {"members": "[]string"}}
    err = _validate(tmp_path, rgd, capsys)
    assert err.startswith('warning: rgd "costly" resource "config" field "data.value"')
    assert reason in err


@pytest.mark.parametrize(
    "expression",
    [
        "string(schema.spec.small.map(a, schema.spec.small.map(b, a + b)).size())",
        "schema.spec.items.map(i, i + '-x').join(',')",
        "schema.spec.text.find('(a+)+$')",
        "random.seededString(16, schema.metadata.uid)",
        "string(cel.bind(x, schema.spec.small, x.map(a, x.map(b, a + b))).size())",
        "string(['a', 'b'].map(a, ['c', 'd'].map(b, a + b)).size())",
    ],
    ids=["bounded-nest", "single-level", "regex", "constant-length", "bound-variable", "literals"],
)
def test_bounded_expressions_do_not_warn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], expression: str
) -> None:
    assert _validate(tmp_path, _rgd({"value": "${" + expression + "}"}), capsys) == ""


def test_status_expressions_are_checked_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rgd = _rgd({"a": "b"})
    expression = "config.data.map(k, config.data.map(j, k + j)).size()"
    rgd["spec"]["schema"]["status"] = {"pairs": "${" + expression + "}"}
    err = _validate(tmp_path, rgd, capsys)
    assert err.startswith(
        f'warning: rgd "costly" field "status.pairs": expression "{expression}": nested '
        "comprehensions over collections of unbounded size (config.data)"
    )


def test_a_graph_warning_names_the_graph_not_an_rgd(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Graph's author reads `graph "<name>"`: there is no RGD to look for."""
    pairs = "string(services.map(a, services.map(b, a.metadata.name + b.metadata.name)).size())"
    graph = {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "Graph",
        "metadata": {"name": "costly", "namespace": "web"},
        "spec": {
            "nodes": [
                {
                    "id": "services",
                    "ref": {
                        "apiVersion": "v1",
                        "kind": "Service",
                        "metadata": {
                            "namespace": "web",
                            "selector": {"matchLabels": {"route": "yes"}},
                        },
                    },
                },
                {
                    "id": "config",
                    "template": {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "pairs", "namespace": "web"},
                        "data": {"pairs": "${" + pairs + "}"},
                    },
                },
            ]
        },
    }
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump(graph), encoding="utf-8")
    assert main(["validate", "-f", str(path)]) == EXIT_OK
    out, err = capsys.readouterr()
    assert out == "Validation successful! The Graph is valid: compiled 2 nodes.\n"
    # A selector ref holds at most --max-collection-size (1000) objects: 1000 x 1000.
    assert err == (
        f'warning: graph "costly" resource "config" field "data.pairs": expression "{pairs}": '
        "nested comprehensions may run 1000000 iterations (1000 x 1000); an evaluation stops "
        "at its time budget (about 100000 iterations)\n"
    )
