"""`kro validate`, `kro generate crd` and `kro graph` (CLI-02, CLI-03, CLI-06): exit codes and
output, offline against the built-in schema bundle plus `--crd` files."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kro.cli.offline import VALID_MESSAGE, add_offline_commands

APP_RGD: dict[str, Any] = {
    "apiVersion": "kro.run/v1alpha1",
    "kind": "ResourceGraphDefinition",
    "metadata": {"name": "my-app"},
    "spec": {
        "schema": {
            "apiVersion": "v1alpha1",
            "kind": "App",
            "spec": {"name": "string", "replicas": "integer | default=1"},
            "status": {"ready": "${deployment.status.readyReplicas}"},
        },
        "resources": [
            {
                "id": "deployment",
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
                "id": "service",
                "includeWhen": ["${schema.spec.replicas > 0}"],
                "template": {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {"name": "${deployment.metadata.name}"},
                    "spec": {"selector": "${deployment.spec.selector.matchLabels}"},
                },
            },
            {
                "id": "config",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.spec.name}-config"},
                },
            },
        ],
    },
}

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "names": {"kind": "Widget", "plural": "widgets"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}
                        },
                    }
                },
            }
        ],
    },
}


def _rgd(name: str, kind: str, resources: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "metadata": {"name": name},
        "spec": {
            "schema": {"apiVersion": "v1alpha1", "kind": kind, "spec": {"name": "string"}},
            "resources": resources,
        },
    }


WIDGET_RGD = _rgd(
    "widgets",
    "WidgetSet",
    [
        {
            "id": "widget",
            "template": {
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "metadata": {"name": "${schema.spec.name}"},
                "spec": {"size": 3},
            },
        }
    ],
)


def write(tmp_path: Path, name: str, *documents: dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(documents), encoding="utf-8")
    return str(path)


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kro")
    add_offline_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.handler(args)
    return code


# --- validate ------------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", [[], ["rgd"]], ids=["validate", "validate-rgd"])
def test_validate_a_valid_rgd(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], prefix: list[str]
) -> None:
    assert run(["validate", *prefix, "-f", write(tmp_path, "rgd.yaml", APP_RGD)]) == 0
    assert capsys.readouterr().out == VALID_MESSAGE + "\n"
    assert VALID_MESSAGE == "Validation successful! The ResourceGraphDefinition is valid."


def test_validate_reports_build_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = json.loads(json.dumps(APP_RGD))
    broken["spec"]["resources"][0]["template"]["spec"]["replicas"] = "${schema.spec.name}"
    assert run(["validate", "-f", write(tmp_path, "rgd.yaml", broken)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        'validation failed: failed to validate resource "deployment": type mismatch in resource '
        '"deployment" at path "spec.replicas": expression "schema.spec.name" returns type '
        '"string" but expected "int"'
    )


@pytest.mark.parametrize(
    ("where", "detail"),
    [
        (("resources", 2, "template", "metadata", "name"),
         'failed to build resource "config": failed to extract CEL expressions from schema for '
         'resource config: unterminated expression "${schema.spec.name-config": '
         'missing closing "}"'),
        (("schema", "status", "ready"),
         'failed to build instance status schema: status.ready: unterminated expression '
         '"${deployment.status.readyReplicas": missing closing "}"'),
    ],
    ids=["template", "status"],
)  # fmt: skip
def test_validate_refuses_an_unterminated_expression_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: tuple[Any, ...], detail: str
) -> None:  # V-06
    broken = json.loads(json.dumps(APP_RGD))
    node = broken["spec"]
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = node[where[-1]].removesuffix("}").replace("}-config", "-config")
    assert run(["validate", "-f", write(tmp_path, "rgd.yaml", broken)]) == 1
    assert capsys.readouterr().err == f"validation failed: {detail}\n"


def test_validate_refuses_graphengine_as_a_resource_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:  # V-07
    broken = json.loads(json.dumps(APP_RGD))
    broken["spec"]["resources"][2]["id"] = "graphengine"
    assert run(["validate", "-f", write(tmp_path, "rgd.yaml", broken)]) == 1
    assert "id graphengine is a reserved keyword in KRO" in capsys.readouterr().err


def test_validate_reports_admission_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = json.loads(json.dumps(APP_RGD))
    broken["spec"]["schema"]["apiVersion"] = "apps/v1"
    assert run(["validate", "-f", write(tmp_path, "rgd.yaml", broken)]) == 1
    assert 'ResourceGraphDefinition "my-app" is invalid: spec.schema.apiVersion' in (
        capsys.readouterr().err
    )


def test_validate_uses_crd_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rgd = write(tmp_path, "rgd.yaml", WIDGET_RGD)
    assert run(["validate", "-f", rgd]) == 1
    assert "failed to get schema for resource widget: schema not found" in capsys.readouterr().err
    crd = write(tmp_path, "crd.yaml", WIDGET_CRD)
    assert run(["validate", "-f", rgd, "--crd", crd]) == 0


def test_validate_chains_rgds_given_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parent = _rgd(
        "parents",
        "Parent",
        [
            {
                "id": "child",
                "template": {
                    "apiVersion": "kro.run/v1alpha1",
                    "kind": "App",
                    "metadata": {"name": "${schema.spec.name}"},
                    "spec": {"name": "${schema.spec.name}", "replicas": 2},
                },
            }
        ],
    )
    path = write(tmp_path, "rgds.yaml", parent, APP_RGD)
    assert run(["validate", "-f", path]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"parents: {VALID_MESSAGE}",
        f"my-app: {VALID_MESSAGE}",
    ]


def test_validate_reports_each_invalid_rgd(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _rgd("bad", "bad", [])
    assert run(["validate", "-f", write(tmp_path, "rgds.yaml", APP_RGD, bad)]) == 1
    out, err = capsys.readouterr()
    assert out == f"my-app: {VALID_MESSAGE}\n"
    assert err.startswith("bad: validation failed: ")


def test_validate_feature_gates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with_omit = json.loads(json.dumps(APP_RGD))
    with_omit["spec"]["resources"][2]["template"]["data"] = {"x": "${omit()}"}
    path = write(tmp_path, "rgd.yaml", with_omit)
    assert run(["validate", "-f", path]) == 1
    assert "CELOmitFunction" in capsys.readouterr().err
    assert run(["validate", "-f", path, "--feature-gates", "CELOmitFunction=true"]) == 0


def test_validate_deletion_policy_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """V-30: offline validation builds as the controller does: the field needs the gate, and
    `Orphaned` with nowhere for its annotation is the same build error."""
    orphaned = json.loads(json.dumps(APP_RGD))
    orphaned["spec"]["resources"][2]["deletionPolicy"] = "Orphaned"
    path = write(tmp_path, "rgd.yaml", orphaned)
    assert run(["validate", "-f", path]) == 1
    assert "DeletionPolicy feature gate" in capsys.readouterr().err
    assert run(["validate", "-f", path, "--feature-gates", "DeletionPolicy=true"]) == 0
    capsys.readouterr()
    orphaned["spec"]["resources"][2]["template"]["metadata"]["annotations"] = (
        "a ${schema.spec.name}"
    )
    path = write(tmp_path, "rgd.yaml", orphaned)
    assert run(["validate", "-f", path, "--feature-gates", "DeletionPolicy=true"]) == 1
    assert "single ${...} expression" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, 'error: the path "'),
        ("kind: ConfigMap\n", "error: no ResourceGraphDefinition or Graph found in"),
        ("a: [b\n", "error: {path}: line 2, column 1: did not find expected ',' or ']'"),
    ],
    ids=["missing-file", "no-rgd", "bad-yaml"],
)
def test_validate_input_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    path = tmp_path / "rgd.yaml"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert run(["validate", "-f", str(path)]) == 1
    assert capsys.readouterr().err.startswith(message.format(path=path))


@pytest.mark.parametrize(
    "argv",
    [["validate"], ["generate", "crd"], ["graph"], ["generate"], ["validate", "x", "-f", "a"]],
    ids=["validate-no-file", "generate-no-file", "graph-no-file", "generate-no-artifact",
         "validate-bad-target"],
)  # fmt: skip
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        run(argv)
    assert caught.value.code == 2


# --- generate crd --------------------------------------------------------------------------------


def test_generate_crd_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["generate", "crd", "-f", write(tmp_path, "rgd.yaml", APP_RGD)]) == 0
    crd = yaml.safe_load(capsys.readouterr().out)
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"] == {
        "name": "apps.kro.run",
        "annotations": {"kro.run/cli-version": "dev"},
    }
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema["properties"]["status"]["properties"]["ready"] == {"type": "integer"}


def test_generate_crd_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "rgd.yaml", APP_RGD)
    assert run(["generate", "crd", "-f", path, "-o", "json"]) == 0
    crd = json.loads(capsys.readouterr().out)
    assert crd["metadata"]["annotations"] == {"kro.run/cli-version": "dev"}


def test_generate_crd_for_several_rgds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "rgds.yaml", APP_RGD, _rgd("other", "Other", []))
    assert run(["generate", "crd", "-f", path]) == 0
    names = [d["metadata"]["name"] for d in yaml.safe_load_all(capsys.readouterr().out)]
    assert names == ["apps.kro.run", "others.kro.run"]
    assert run(["generate", "crd", "-f", path, "-o", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert (listed["kind"], len(listed["items"])) == ("List", 2)


def test_generate_crd_rejects_unknown_formats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "rgd.yaml", APP_RGD)
    assert run(["generate", "crd", "-f", path, "-o", "xml"]) == 2
    assert capsys.readouterr().err == "error: unsupported output format: xml\n"


def test_generate_crd_of_an_invalid_rgd(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    path = write(tmp_path, "rgd.yaml", _rgd("bad", "Bad", [{"id": "my-cm", "template": cm}]))
    assert run(["generate", "crd", "-f", path]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "naming convention violation" in err


# --- graph ---------------------------------------------------------------------------------------


def test_graph_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["graph", "-f", write(tmp_path, "rgd.yaml", APP_RGD)]) == 0
    assert capsys.readouterr().out == (
        "ResourceGraphDefinition: my-app\n"
        "Instance: kro.run/v1alpha1, Kind=App\n"
        "Topological order: deployment, service, config\n"
        "Apply-order waves (deletion runs from the highest wave down):\n"
        "  1: deployment\n"
        "  2: service, config\n"
        "Nodes:\n"
        "  deployment: Resource, apps/v1/Deployment\n"
        "  service: Resource, v1/Service, conditional\n"
        "  config: Resource, v1/ConfigMap\n"
        "Edges (dependency -> dependent):\n"
        "  deployment -> service\n"
    )


def test_graph_mermaid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "rgd.yaml", APP_RGD)
    assert run(["graph", "-f", path, "--format", "mermaid"]) == 0
    assert capsys.readouterr().out == (
        "flowchart TD\n"
        '  deployment["deployment<br/>Deployment (wave 1)"]\n'
        '  service["service?<br/>Service (wave 2)"]\n'
        '  config["config<br/>ConfigMap (wave 2)"]\n'
        "  deployment --> service\n"
    )


def test_graph_dot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "rgd.yaml", APP_RGD)
    assert run(["graph", "-f", path, "--format", "dot"]) == 0
    assert capsys.readouterr().out == (
        'digraph "my-app" {\n'
        "  rankdir=LR;\n"
        '  "deployment" [label="deployment\\nDeployment (wave 1)", shape=box];\n'
        '  "service" [label="service?\\nService (wave 2)", shape=box, style="dashed"];\n'
        '  "config" [label="config\\nConfigMap (wave 2)", shape=box];\n'
        '  "deployment" -> "service";\n'
        "}\n"
    )


def test_graph_shows_collections_and_external_refs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rgd = _rgd(
        "mixed",
        "Mixed",
        [
            {
                "id": "shared",
                "externalRef": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "shared"},
                },
            },
            {
                "id": "copies",
                "forEach": [{"key": "${shared.data.map(k, k)}"}],
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.spec.name}-${key}"},
                },
            },
        ],
    )
    path = write(tmp_path, "rgd.yaml", rgd)
    assert run(["graph", "-f", path]) == 0
    out = capsys.readouterr().out
    assert "  shared: External, v1/ConfigMap\n" in out
    assert "  copies: Collection, v1/ConfigMap, forEach key\n" in out
    assert run(["graph", "-f", path, "--format", "mermaid"]) == 0
    out = capsys.readouterr().out
    assert '  shared(["shared<br/>ConfigMap (wave 1)"])\n' in out
    assert '  copies[["copies<br/>ConfigMap (wave 2)"]]\n' in out


def test_graph_rejects_unknown_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "rgd.yaml", APP_RGD)
    assert run(["graph", "-f", path, "--format", "svg"]) == 2
    assert capsys.readouterr().err == "error: unsupported output format: svg\n"


def test_commands_are_wired_into_the_kro_entry_point(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kro.cli.main import main

    assert main(["validate", "-f", write(tmp_path, "rgd.yaml", APP_RGD)]) == 0
    assert capsys.readouterr().out == VALID_MESSAGE + "\n"
