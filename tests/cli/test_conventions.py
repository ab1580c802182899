"""The command-line conventions kubectl users expect: `-f -`, `-f DIR` and `-R`, a message per
file prefixed by its name, `--version`, `python -m kro`, `-o json|yaml`, and a quiet exit when
the reader of stdout goes away (`kro generate crd -f x | head -1`)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kro.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
NGINX = ROOT / "examples" / "nginxapp"
VALID = "Validation successful! The ResourceGraphDefinition is valid."


def _bad_copy(source: Path, target: Path) -> Path:
    """The RGD at `source` with one unknown field, written to `target`."""
    rgd = yaml.safe_load(source.read_text(encoding="utf-8"))
    rgd["spec"]["extraField"] = True
    target.write_text(yaml.safe_dump(rgd, sort_keys=False), encoding="utf-8")
    return target


def test_dash_reads_standard_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO((NGINX / "rgd.yaml").read_text()))
    assert main(["validate", "-f", "-"]) == 0
    assert capsys.readouterr().out == VALID + "\n"


def test_messages_about_standard_input_say_STDIN(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("a: [b\n"))
    assert main(["validate", "-f", "-"]) == 1
    assert capsys.readouterr().err.startswith("error: STDIN: line 2, column 1: ")


def test_a_directory_reads_its_manifests_and_skips_other_kinds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(NGINX, tmp_path / "nginxapp")
    (tmp_path / "nginxapp" / "notes.txt").write_text("not yaml: [", encoding="utf-8")
    assert main(["validate", "-f", str(tmp_path / "nginxapp")]) == 0
    # instance.yaml and rbac.yaml are read and hold no RGD; several files: messages say which
    assert capsys.readouterr().out == f"{tmp_path / 'nginxapp' / 'rgd.yaml'}: {VALID}\n"


def test_subdirectories_need_recursive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(NGINX, tmp_path / "platform" / "nginxapp")
    assert main(["validate", "-f", str(tmp_path / "platform")]) == 1
    assert "no .yaml, .yml or .json files" in capsys.readouterr().err
    assert main(["validate", "-f", str(tmp_path / "platform"), "-R"]) == 0
    assert capsys.readouterr().out.endswith(f"nginxapp/rgd.yaml: {VALID}\n")


def test_each_message_names_its_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.yaml"
    shutil.copy(NGINX / "rgd.yaml", good)
    bad = _bad_copy(ROOT / "examples" / "application" / "rgd.yaml", tmp_path / "bad.yaml")
    assert main(["validate", "-f", str(good), "-f", str(bad)]) == 1
    out, err = capsys.readouterr()
    assert out == f"{good}: reviewed-nginxapps: {VALID}\n"
    assert err == f'{bad}: my-application: validation failed: unknown field "spec.extraField"\n'


def test_a_missing_path_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-f", "no/such/rgd.yaml"]) == 1
    assert capsys.readouterr().err == 'error: the path "no/such/rgd.yaml" does not exist\n'


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"kro {version('kro')}\n"


def test_python_dash_m_kro_runs_the_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kro", "validate", "-f", str(NGINX / "rgd.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, VALID + "\n", "")


def _kro(*argv: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "kro", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def test_a_reader_that_closed_ends_the_command_quietly() -> None:
    """Nobody reads stdout any more: exit 141 (as if killed by SIGPIPE), nothing on stderr."""
    process = _kro("generate", "crd", "-f", str(NGINX / "rgd.yaml"))
    assert process.stdout is not None
    assert process.stderr is not None
    process.stdout.close()  # closed before the command writes anything
    err = process.stderr.read()
    assert process.wait(timeout=120) == 141
    assert err == b""


def test_a_reader_that_stops_early_sees_no_traceback(tmp_path: Path) -> None:
    """`kro generate crd -f DIR | head -1`: head exits after one line."""
    for index in range(40):
        rgd = yaml.safe_load((NGINX / "rgd.yaml").read_text(encoding="utf-8"))
        rgd["metadata"]["name"] = f"app{index}"
        rgd["spec"]["schema"]["kind"] = f"App{index}"
        (tmp_path / f"rgd{index}.yaml").write_text(yaml.safe_dump(rgd), encoding="utf-8")
    process = _kro("generate", "crd", "-f", str(tmp_path))
    assert process.stdout is not None
    assert process.stderr is not None
    head = subprocess.run(
        ["head", "-n", "1"], stdin=process.stdout, capture_output=True, timeout=120, check=False
    )
    process.stdout.close()
    err = process.stderr.read()
    assert process.wait(timeout=120) in (0, 141)
    assert head.stdout == b"apiVersion: apiextensions.k8s.io/v1\n"
    assert err == b""


# --- -o json|yaml ------------------------------------------------------------------------------


def test_validate_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = _bad_copy(NGINX / "rgd.yaml", tmp_path / "bad.yaml")
    assert main(["validate", "-f", str(bad), "-o", "json"]) == 1
    assert json.loads(capsys.readouterr().out) == {
        "valid": False,
        "results": [
            {
                "file": str(bad),
                "kind": "ResourceGraphDefinition",
                "name": "reviewed-nginxapps",
                "valid": False,
                "errors": ['unknown field "spec.extraField"'],
                "warnings": [],
            }
        ],
    }


def test_validate_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(NGINX / "rgd.yaml")
    assert main(["validate", "-f", path, "-o", "yaml"]) == 0
    out, err = capsys.readouterr()
    assert yaml.safe_load(out)["results"][0] == {
        "file": path, "kind": "ResourceGraphDefinition", "name": "reviewed-nginxapps",
        "valid": True, "errors": [], "warnings": [],
    }  # fmt: skip
    assert err == ""


def test_graph_json_and_yaml_agree(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(NGINX / "rgd.yaml")
    assert main(["graph", "-f", path, "-o", "json"]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert main(["graph", "-f", path, "-o", "yaml"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == as_json
    assert as_json["graphs"][0]["topologicalOrder"] == ["deployment", "service", "ingress"]


def test_graph_keeps_format_as_an_alias(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", "-f", str(NGINX / "rgd.yaml"), "--format", "mermaid"]) == 0
    assert capsys.readouterr().out.startswith("flowchart TD\n")


def test_render_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["render", "-f", str(NGINX / "rgd.yaml"), "-i", str(NGINX / "instance.yaml")]
    assert main([*argv, "-o", "json"]) == 0
    (instance,) = json.loads(capsys.readouterr().out)["instances"]
    states = {r["id"]: r["state"] for r in instance["resources"]}
    assert states == {"deployment": "rendered", "service": "waiting", "ingress": "skipped"}
    assert instance["instance"]["spec"]["replicas"] == 2  # as written
    assert instance["resources"][0]["objects"][0]["kind"] == "Deployment"


def test_render_picks_the_rgd_of_the_instance_kind(capsys: pytest.CaptureFixture[str]) -> None:
    # Every example directory but the fleet's (its targets need the MultiCluster gate, and this
    # runs without gates: tests/cli/test_examples_validate.py).
    examples = [
        p for p in sorted((ROOT / "examples").iterdir()) if p.is_dir() and p.name != "fleet"
    ]
    inputs = [arg for path in examples for arg in ("-f", str(path))]
    argv = ["render", *inputs, "-R", "-i", str(NGINX / "instance.yaml")]
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith("# instance NginxApp/")


@pytest.mark.parametrize("command", ["validate", "graph", "render"], ids=str)
def test_unknown_output_formats_are_usage_errors(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [command, "-f", str(NGINX / "rgd.yaml"), "-o", "xml"]
    if command == "render":
        argv += ["-i", str(NGINX / "instance.yaml")]
    assert main(argv) == 2
    assert capsys.readouterr().err == "error: unsupported output format: xml\n"


def test_help_is_written_for_users(capsys: pytest.CaptureFixture[str]) -> None:
    """No reference IDs, no module names, no metavar cut short."""
    import re

    texts = []
    for argv in (["--help"], ["validate", "--help"], ["graph", "--help"], ["render", "--help"],
                 ["generate", "crd", "--help"], ["controller", "--help"]):  # fmt: skip
        with pytest.raises(SystemExit):
            main(argv)
        texts.append(capsys.readouterr().out)
    text = "\n".join(texts)
    assert not re.search(r"§|\b[A-Z]{1,3}-\d{2}\b|kro\.(cli|graph)\.", text)
    assert "HEALTH_PROBE_BIND_ADDRES " not in text
    assert "LEADER_ELECTION" not in text


def test_validate_with_kubeconfig_prints_no_log_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A kubeconfig that cannot be read is one error line; no library log records."""
    config = tmp_path / "kubeconfig"
    config.write_text("not: a kubeconfig\n", encoding="utf-8")
    assert main(["validate", "-f", str(NGINX / "rgd.yaml"), "--kubeconfig", str(config)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("error: cannot read schemas from the cluster: ")
    assert len(err.splitlines()) == 1


def _widget_rgd(tmp_path: Path) -> str:
    rgd = {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "metadata": {"name": "widgets"},
        "spec": {
            "schema": {"apiVersion": "v1alpha1", "kind": "WidgetSet", "spec": {"name": "string"}},
            "resources": [{"id": "widget", "template": {
                "apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "${schema.spec.name}"}, "spec": {"size": 3}}}],
        },
    }  # fmt: skip
    path = tmp_path / "rgd.yaml"
    path.write_text(yaml.safe_dump(rgd), encoding="utf-8")
    return str(path)


def _widget_crd(properties: dict[str, object]) -> dict[str, object]:
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": properties}},
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": schema}}],
        },
    }  # fmt: skip


def test_crd_directories_are_read_like_f(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rgd = _widget_rgd(tmp_path)
    crds = tmp_path / "crds"
    crds.mkdir()
    (crds / "widget.yaml").write_text(yaml.safe_dump(_widget_crd({"size": {"type": "integer"}})))
    assert main(["validate", "-f", rgd, "--crd", str(crds)]) == 0
    capsys.readouterr()
    (crds / "widget.yaml").write_text(yaml.safe_dump(_widget_crd({"count": {"type": "integer"}})))
    assert main(["validate", "-f", rgd, "--crd", str(crds)]) == 1
    assert capsys.readouterr().err == (
        'validation failed: resource "widget" (example.com/v1 Widget): unknown field "spec.size"\n'
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("a: [b\n", "error: {path}: line 2, column 1: did not find expected"),
        ("kind: ConfigMap\n", "error: no CustomResourceDefinition found in {path}\n"),
    ],
    ids=["yaml-error", "no-crd"],
)
def test_crd_file_errors_name_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    crd = tmp_path / "crd.yaml"
    crd.write_text(content, encoding="utf-8")
    assert main(["validate", "-f", _widget_rgd(tmp_path), "--crd", str(crd)]) == 1
    assert capsys.readouterr().err.startswith(message.format(path=crd))
