"""A table of bad RGDs and bad instances: each is refused with the expected message fragment
and exit code, in one line per problem, naming the file, without engine-internal names.

`validate` cases refuse an RGD the API server (with kubectl's strict field validation) or kro
would refuse; `render` cases refuse an instance the API server would refuse for the CRD the
RGD generates. The RGD and instance below are valid; each case breaks one thing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from kro.cli.main import main

RGD: dict[str, Any] = {
    "apiVersion": "kro.run/v1alpha1",
    "kind": "ResourceGraphDefinition",
    "metadata": {"name": "apps"},
    "spec": {
        "schema": {
            "apiVersion": "v1alpha1",
            "kind": "App",
            "spec": {
                "name": 'string | required=true minLength=2 pattern="^[a-z-]+$"',
                "replicas": "integer | default=1 minimum=1 maximum=10",
                "mode": 'string | enum="fast,slow" default="fast"',
                "tags": "[]string | maxItems=2 uniqueItems=true",
                "port": 'integer | default=80 validation="self != 22"',
                "labels": "map[string]string",
                "nested": {"inner": "string"},
            },
            "status": {"ready": "${deployment.status.readyReplicas}"},
        },
        "resources": [
            {
                "id": "deployment",
                "readyWhen": ["${deployment.status.readyReplicas > 0}"],
                "template": {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": "${schema.spec.name}"},
                    "spec": {
                        "replicas": "${schema.spec.replicas}",
                        "selector": {"matchLabels": {"app": "${schema.spec.name}"}},
                        "template": {
                            "metadata": {"labels": {"app": "${schema.spec.name}"}},
                            "spec": {"containers": [{"name": "web", "image": "nginx"}]},
                        },
                    },
                },
            },
            {
                "id": "shared",
                "externalRef": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "shared"},
                },
            },
        ],
    },
}

INSTANCE: dict[str, Any] = {
    "apiVersion": "kro.run/v1alpha1",
    "kind": "App",
    "metadata": {"name": "web"},
    "spec": {"name": "web", "replicas": 2, "tags": ["a"]},
}

Edit = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class Case:
    """Break the RGD (`rgd`: an edit, or raw YAML text) or the instance (`instance`)."""

    fragment: str
    rgd: Edit | str | None = None
    instance: Edit | str | None = None
    code: int = 1
    argv: tuple[str, ...] = ()


def _set(path: str, value: Any) -> Edit:
    """An edit that sets a dotted path (`spec.resources.0.id`) to `value`."""

    def edit(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = obj
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return edit


def _rename(path: str, new: str) -> Edit:
    def edit(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = obj
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        node[new] = node.pop(last)

    return edit


def _delete(path: str) -> Edit:
    def edit(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = obj
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        del node[last]

    return edit


def _spec(**fields: Any) -> Edit:
    return lambda obj: obj["spec"].update(fields)


def _template(obj: dict[str, Any]) -> dict[str, Any]:
    template: dict[str, Any] = obj["spec"]["resources"][0]["template"]
    return template


def _add_cycle(obj: dict[str, Any]) -> None:
    """deployment reads `other`, which reads deployment."""
    _template(obj)["metadata"]["labels"] = {"x": "${other.metadata.name}"}
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "${deployment.metadata.name}"},
    }
    obj["spec"]["resources"].append({"id": "other", "template": cm})


_DEPLOYMENT = "spec.resources.0.template"
_DUPLICATE_ID = yaml.safe_dump(RGD, sort_keys=False).replace(
    "  - id: deployment\n", "  - id: deployment\n    id: deployment\n", 1
)
_DUPLICATE_TEMPLATE_NAME = yaml.safe_dump(RGD, sort_keys=False).replace(
    "        name: ${schema.spec.name}\n",
    "        name: ${schema.spec.name}\n        name: other\n",
    1,
)

VALIDATE_CASES: dict[str, Case] = {
    # strict decoding of the RGD (kubectl --validate=strict)
    "unknown-spec-field": Case('unknown field "spec.extraField"', _set("spec.extraField", 1)),
    "misspelled-readyWhen": Case(
        'unknown field "spec.resources[0].readyWen"',
        _rename("spec.resources.0.readyWhen", "readyWen"),
    ),
    "duplicate-key": Case('duplicate field "spec.resources[0].id"', _DUPLICATE_ID),
    "duplicate-key-in-template": Case(
        'duplicate field "spec.resources[0].template.metadata.name"', _DUPLICATE_TEMPLATE_NAME
    ),
    "unknown-schema-field": Case(
        'unknown field "spec.schema.kindd"', _set("spec.schema.kindd", "X")
    ),
    "unknown-metadata-field": Case('unknown field "metadata.labelz"', _set("metadata.labelz", {})),
    "unknown-top-level-field": Case('unknown field "specs"', _set("specs", {})),
    "unknown-externalRef-field": Case(
        'unknown field "spec.resources[1].externalRef.metadata.nam"',
        _set("spec.resources.1.externalRef.metadata.nam", "x"),
    ),
    "removed-schema-validation-field": Case(
        'unknown field "spec.schema.validation"',
        _set("spec.schema.validation", [{"expression": "true", "message": "m"}]),
    ),
    # templates of closed kinds
    "template-unknown-field": Case(
        'resource "deployment" (apps/v1 Deployment): unknown field "spec.replica"',
        _rename(f"{_DEPLOYMENT}.spec.replicas", "replica"),
    ),
    "template-unknown-container-field": Case(
        'unknown field "spec.template.spec.containers[0].imagePullPolice"',
        _set(f"{_DEPLOYMENT}.spec.template.spec.containers.0.imagePullPolice", "Always"),
    ),
    "template-unknown-metadata-field": Case(
        'unknown field "metadata.labelz"', _set(f"{_DEPLOYMENT}.metadata.labelz", {})
    ),
    "template-unknown-top-level-field": Case('unknown field "spc"', _set(f"{_DEPLOYMENT}.spc", {})),
    # admission rules of the RGD API
    "schema-apiVersion-with-group": Case(
        'ResourceGraphDefinition "apps" is invalid: spec.schema.apiVersion',
        _set("spec.schema.apiVersion", "apps/v1"),
    ),
    "template-and-externalRef": Case(
        "exactly one of template or externalRef must be provided",
        _set("spec.resources.1.template", {"apiVersion": "v1", "kind": "ConfigMap"}),
    ),
    "readyWhen-not-a-list": Case(
        "spec.resources[0].readyWhen", _set("spec.resources.0.readyWhen", "${true}")
    ),
    "short-name-pattern": Case(
        "spec.schema.shortNames[0]", _set("spec.schema.shortNames", ["A_B"])
    ),
    # the graph build
    "lowercase-kind": Case(
        """spec.schema.kind: Invalid value: "app": should match""", _set("spec.schema.kind", "app")
    ),
    "resource-id-not-camel-case": Case(
        "naming convention violation: id my-db is not a valid KRO resource id",
        _set("spec.resources.1.id", "my-db"),
    ),
    "duplicate-resource-ids": Case(
        "found duplicate resource IDs", _set("spec.resources.1.id", "deployment")
    ),
    "unknown-kind-names-it-and-hints": Case(
        "schema not found for kind Widget (apiVersion example.com/v1): give its "
        "CustomResourceDefinition with --crd FILE, or read it from a cluster with --kubeconfig",
        lambda obj: _template(obj).update(apiVersion="example.com/v1", kind="Widget", spec={}),
    ),
    "schema-field-does-not-exist": Case(
        "spec.foo: no such field in the instance schema",
        _set(f"{_DEPLOYMENT}.metadata.name", "${schema.spec.foo}"),
    ),
    "resource-field-does-not-exist": Case(
        'spec.foo: no such field in the schema of "deployment"',
        _set("spec.schema.status.ready", "${deployment.spec.foo}"),
    ),
    "object-where-string-expected": Case(
        'returns type "object (schema.spec.nested)"',
        _set(f"{_DEPLOYMENT}.metadata.name", "${schema.spec.nested}"),
    ),
    "template-literal-wrong-type": Case(
        "expected integer type for path spec.replicas, got string",
        _set(f"{_DEPLOYMENT}.spec.replicas", "three"),
    ),
    "invalid-marker": Case(
        "failed to parse", _set("spec.schema.spec.replicas", "integer | minimum=abc")
    ),
    "crd-rule-does-not-compile": Case(
        'x-kubernetes-validations[0]: rule "self.foo > 1" does not compile',
        _set("spec.schema.spec.port", 'integer | validation="self.foo > 1"'),
    ),
    "dependency-cycle": Case("cycle", _add_cycle),
    # input and usage
    "yaml-syntax-error-names-the-file": Case("rgd.yaml: line 2, column 1: ", "a: [b\n"),
    "document-is-not-an-object": Case(
        "rgd.yaml: document 1 is a list, not an object", "- a\n- b\n"
    ),
    "no-rgd-in-file": Case("no ResourceGraphDefinition or Graph found in", "kind: ConfigMap\n"),
    "unsupported-output-format": Case("unsupported output format: xml", argv=("-o", "xml"), code=2),
}

RENDER_CASES: dict[str, Case] = {
    "string-for-integer": Case(
        'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: '
        '"string"',
        instance=_spec(replicas="three"),
    ),
    "missing-required-field": Case("spec.name: Required value", instance=_delete("spec.name")),
    "other-kind": Case(
        "expected an instance of kind App (apiVersion kro.run/v1alpha1), got kind Other "
        "(apiVersion kro.run/v1alpha1)",
        instance=_set("kind", "Other"),
    ),
    "other-group": Case(
        "got kind App (apiVersion example.com/v1alpha1)",
        instance=_set("apiVersion", "example.com/v1alpha1"),
    ),
    "the-rgd-itself": Case(
        "got kind ResourceGraphDefinition (apiVersion kro.run/v1alpha1) (the "
        "ResourceGraphDefinition itself",
        instance=yaml.safe_dump(RGD),
    ),
    "enum": Case(
        'spec.mode: Unsupported value: "medium": supported values: "fast", "slow"',
        instance=_spec(mode="medium"),
    ),
    "minimum": Case(
        "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal "
        "to 1",
        instance=_spec(replicas=0),
    ),
    "maximum": Case(
        "spec.replicas in body should be less than or equal to 10", instance=_spec(replicas=11)
    ),
    "min-length": Case(
        'spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long',
        instance=_spec(name="a"),
    ),
    "pattern": Case("spec.name in body should match '^[a-z-]+$'", instance=_spec(name="Web")),
    "max-items": Case(
        "spec.tags: Too many: 3: must have at most 2 items", instance=_spec(tags=["a", "b", "c"])
    ),
    "set-duplicates": Case('spec.tags[1]: Duplicate value: "a"', instance=_spec(tags=["a", "a"])),
    "unknown-spec-field": Case('unknown field "spec.extra"', instance=_spec(extra=1)),
    "unknown-nested-field": Case(
        'unknown field "spec.nested.outer"', instance=_spec(nested={"outer": "x"})
    ),
    "cel-rule": Case(
        'spec.port: Invalid value: "integer": validation failed', instance=_spec(port=22)
    ),
    "cel-rules-skipped-on-type-errors": Case(
        "some validation rules were not checked because the object was invalid",
        instance=_spec(port="ssh"),
    ),
    "missing-name": Case(
        "metadata.name: Required value: name or generateName is required",
        instance=_delete("metadata.name"),
    ),
    "name-not-dns": Case(
        'metadata.name: Invalid value: "My_App": a lowercase RFC 1123 subdomain',
        instance=_set("metadata.name", "My_App"),
    ),
    "unknown-metadata-field": Case(
        'unknown field "metadata.labelz"', instance=_set("metadata.labelz", {})
    ),
    "list-for-map": Case(
        'spec.labels: Invalid value: "array": spec.labels in body must be of type object',
        instance=_spec(labels=["a"]),
    ),
    "boolean-for-string": Case(
        'spec.name in body must be of type string: "boolean"', instance=_spec(name=True)
    ),
    "unknown-top-level-field": Case('unknown field "specs"', instance=_set("specs", {})),
    "instance-yaml-error-names-the-file": Case(
        "instance.yaml: line 2, column 1: ", instance="a: [b\n"
    ),
    "no-instance": Case("no instance found in", instance="# nothing\n"),
}


def _write(path: Path, base: dict[str, Any], change: Edit | str | None) -> str:
    if isinstance(change, str):
        path.write_text(change, encoding="utf-8")
    else:
        obj = copy.deepcopy(base)
        if change is not None:
            change(obj)
        path.write_text(yaml.safe_dump(obj, sort_keys=False), encoding="utf-8")
    return str(path)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    return code, capsys.readouterr().err


def _assert_readable(err: str) -> None:
    """One line per problem, in the user's terms."""
    assert "kro.t" not in err
    assert "<unicode string>" not in err
    assert "Traceback" not in err
    assert not any(line.startswith((" ", "|")) for line in err.splitlines()), err


@pytest.mark.parametrize("name", sorted(VALIDATE_CASES), ids=str)
def test_bad_rgd_is_refused(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = VALIDATE_CASES[name]
    rgd = _write(tmp_path / "rgd.yaml", RGD, case.rgd)
    code, err = _run(["validate", "-f", rgd, *case.argv], capsys)
    assert case.fragment in err
    assert code == case.code
    _assert_readable(err)


@pytest.mark.parametrize("name", sorted(RENDER_CASES), ids=str)
def test_bad_instance_is_refused(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = RENDER_CASES[name]
    rgd = _write(tmp_path / "rgd.yaml", RGD, None)
    instance = _write(tmp_path / "instance.yaml", INSTANCE, case.instance)
    code, err = _run(["render", "-f", rgd, "-i", instance, *case.argv], capsys)
    assert case.fragment in err
    assert code == case.code
    _assert_readable(err)
    if "line" not in case.fragment and "no instance" not in case.fragment:
        assert all(line.startswith(("error: ", instance)) for line in err.splitlines()), err


def test_the_unchanged_rgd_and_instance_are_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rgd = _write(tmp_path / "rgd.yaml", RGD, None)
    instance = _write(tmp_path / "instance.yaml", INSTANCE, None)
    assert _run(["validate", "-f", rgd], capsys) == (0, "")
    assert main(["render", "-f", rgd, "-i", instance]) == 0
    assert "kind: Deployment" in capsys.readouterr().out


def test_every_problem_of_an_instance_is_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rgd = _write(tmp_path / "rgd.yaml", RGD, None)
    bad = _spec(replicas="three", mode="medium", extra=1)
    instance = _write(tmp_path / "instance.yaml", INSTANCE, bad)
    code, err = _run(["render", "-f", rgd, "-i", instance], capsys)
    assert code == 1
    assert [line.split(": ", 3)[2] for line in err.splitlines()] == [
        "spec.replicas",
        "spec.mode",
        'unknown field "spec.extra"',
        "<nil>",
    ]


def test_an_invalid_instance_renders_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rgd = _write(tmp_path / "rgd.yaml", RGD, None)
    instance = _write(tmp_path / "instance.yaml", INSTANCE, _spec(replicas="three"))
    assert main(["render", "-f", rgd, "-i", instance]) == 1
    assert capsys.readouterr().out == ""


def test_an_expression_key_in_a_closed_schema_is_not_an_unknown_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A `${...}` key gets its name per instance: strict decoding cannot judge it."""
    from kro.cli.strict import template_field_errors
    from kro.graph.resolver import OfflineSchemaResolver

    rgd = copy.deepcopy(RGD)
    rgd["spec"]["resources"][0]["template"]["spec"]["${schema.spec.name}"] = 1
    errors = template_field_errors(rgd, OfflineSchemaResolver.from_files(), final=True)
    assert errors == []
