"""`kro generate rbac`: the least-privilege ClusterRole for each RGD given, offline, with the
chart's aggregation label in aggregation mode; exit codes 0 / 1 (invalid RGD) / 2 (usage)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kro.cli.rbac import add_rbac_command

REPO = Path(__file__).resolve().parents[2]
NGINXAPP = REPO / "examples" / "nginxapp" / "rgd.yaml"
WRITE = ["get", "list", "watch", "create", "patch", "delete"]

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.org"},
    "spec": {
        "group": "example.org",
        "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget",
                  "listKind": "GadgetList"},
        "scope": "Cluster",
        "versions": [{"name": "v1", "served": True, "storage": True,
                      "schema": {"openAPIV3Schema": {
                          "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
    },
}


def rgd(name: str, kind: str, resources: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
        "metadata": {"name": name},
        "spec": {"schema": {"apiVersion": "v1alpha1", "kind": kind, "group": "example.com",
                            "spec": {"name": "string | default=x"}},
                 "resources": resources},
    }


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="kro")
    commands = parser.add_subparsers(dest="command", required=True)
    generate = commands.add_parser("generate").add_subparsers(dest="artifact", required=True)
    add_rbac_command(generate)
    try:
        args = parser.parse_args(["generate", "rbac", *argv])
        code = int(args.handler(args))
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, name: str, *documents: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(documents))
    return path


def test_nginxapp_in_aggregation_mode(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "-f", str(NGINXAPP), "--mode", "aggregation")
    assert (code, err) == (0, "")
    assert yaml.safe_load(out) == {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "kro:controller:reviewed-nginxapps",
                     "labels": {"rbac.kro.run/aggregate-to-controller": "true"}},
        "rules": [
            {"apiGroups": [""], "resources": ["services"], "verbs": WRITE},
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": WRITE},
            {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses"], "verbs": WRITE},
            {"apiGroups": ["platform.example.com"], "resources": ["nginxapps"],
             "verbs": ["get", "list", "watch", "patch"]},
            {"apiGroups": ["platform.example.com"], "resources": ["nginxapps/status"],
             "verbs": ["patch"]},
        ],
    }


def test_yaml_keeps_short_lists_on_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "-f", str(NGINXAPP))
    assert "  - apiGroups: [apps]\n    resources: [deployments]\n" in out
    assert "    verbs: [get, list, watch, create, patch, delete]\n" in out


def test_standalone_mode_has_no_aggregation_label_and_json_output(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "-f", str(NGINXAPP), "-o", "json", "--fullname", "platform-kro")
    role = json.loads(out)
    assert code == 0
    assert role["metadata"] == {"name": "platform-kro:controller:reviewed-nginxapps"}


def test_one_role_per_rgd_and_rgds_serve_each_other(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = rgd("widgets", "Widget", [{"id": "cm", "template": {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "${schema.metadata.name}"}}}])
    stack = rgd("stacks", "Stack", [{"id": "widget", "template": {
        "apiVersion": "example.com/v1alpha1", "kind": "Widget",
        "metadata": {"name": "${schema.metadata.name}"}}}])
    code, out, _ = run(capsys, "-f", str(write(tmp_path, "rgds.yaml", stack, base)))
    assert code == 0
    roles = list(yaml.safe_load_all(out))
    assert [r["metadata"]["name"] for r in roles] == ["kro:controller:stacks",
                                                       "kro:controller:widgets"]
    # The Stack RGD creates Widgets: the instance kind of the other RGD is its child kind.
    assert {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": WRITE} in roles[0][
        "rules"]


def test_custom_kinds_come_from_crd_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = rgd("gadgets", "Holder", [{"id": "gadget", "externalRef": {
        "apiVersion": "example.org/v1", "kind": "Gadget", "metadata": {"name": "main"}}}])
    path = write(tmp_path, "rgd.yaml", spec)
    code, _, err = run(capsys, "-f", str(path))
    assert code == 1
    assert "Gadget" in err
    code, out, err = run(capsys, "-f", str(path), "--crd",
                         str(write(tmp_path, "crd.yaml", WIDGET_CRD)))
    assert (code, err) == (0, "")
    assert {"apiGroups": ["example.org"], "resources": ["gadgets"],
            "verbs": ["get", "list", "watch"]} in yaml.safe_load(out)["rules"]


def test_templates_creating_rbac_objects_warn_about_escalation(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = rgd("grants", "Grant", [{"id": "binding", "template": {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "${schema.metadata.name}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "view"},
        "subjects": [{"kind": "User", "name": "${schema.spec.name}"}]}}])
    code, out, err = run(capsys, "-f", str(write(tmp_path, "rgd.yaml", spec)))
    assert code == 0
    assert err.startswith("warning: grants: resource 'binding' creates RoleBinding objects: ")
    assert "escalate/bind" in err
    assert yaml.safe_load(out)["kind"] == "ClusterRole"


def test_an_invalid_rgd_prints_nothing_and_exits_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = rgd("broken", "Broken", [{"id": "cm", "template": {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "${nope.metadata.name}"}}}])
    code, out, err = run(capsys, "-f", str(write(tmp_path, "rgd.yaml", spec)))
    assert (code, out) == (1, "")
    assert err.startswith("validation failed: ")


def test_a_file_without_rgds_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "-f", str(write(tmp_path, "crd.yaml", WIDGET_CRD)))
    assert (code, out) == (1, "")
    assert err.startswith("error: no ResourceGraphDefinition or Graph found in ")


@pytest.mark.parametrize("argv", [["--mode", "bogus"], ["-o", "toml"], []],
                         ids=["mode", "output", "no-file"])
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *(["-f", str(NGINXAPP)] if argv else []), *argv)
    assert (code, out) == (2, "")
