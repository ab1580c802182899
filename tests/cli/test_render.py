"""`kro render`: offline rendering of every example, stepping through readiness with
`--observed`, and exit codes (issue: offline CLI). Golden files: KRO_UPDATE_GOLDEN=1 rewrites."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from kro.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden"
EXAMPLES = {
    "nginxapp": ("examples/nginxapp/rgd.yaml", "examples/nginxapp/instance.yaml"),
    "application": ("examples/application/rgd.yaml", "examples/application/instance.yaml"),
    "webapp": ("examples/upstream/webapp/rg.yaml", "examples/upstream/webapp/instance.yaml"),
    "defaults": ("examples/upstream/defaults/rg.yaml", "examples/upstream/defaults/instance.yaml"),
}


@pytest.mark.parametrize("name", sorted(EXAMPLES), ids=str)
def test_render_matches_golden(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    rgd, instance = EXAMPLES[name]
    assert main(["render", "-f", str(ROOT / rgd), "-i", str(ROOT / instance)]) == 0
    output = capsys.readouterr().out
    golden = GOLDEN / f"render-{name}.txt"
    if os.environ.get("KRO_UPDATE_GOLDEN"):
        golden.write_text(output)
    assert output == golden.read_text()


def test_observed_status_lets_dependents_render(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    observed = tmp_path / "observed.yaml"
    observed.write_text(yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "reviewed-web", "namespace": "example", "generation": 1},
        "spec": {"replicas": 2,
                 "selector": {"matchLabels": {"app.kubernetes.io/name": "reviewed-web"}}},
        "status": {"availableReplicas": 2, "observedGeneration": 1},
    }))
    rgd, instance = EXAMPLES["nginxapp"]
    code = main(["render", "-f", str(ROOT / rgd), "-i", str(ROOT / instance),
                 "--observed", str(observed)])
    output = capsys.readouterr().out
    assert code == 0
    assert "# service (apply order 2)" in output
    assert "kind: Service" in output
    assert "availableReplicas: 2" in output  # the status projection now resolves
    assert "# service: waiting" not in output


def test_without_observed_status_the_waiting_node_says_why(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rgd, instance = EXAMPLES["nginxapp"]
    main(["render", "-f", str(ROOT / rgd), "-i", str(ROOT / instance)])
    output = capsys.readouterr().out
    assert '# service: waiting: node "service": dependent node "deployment" not ready' in output
    assert "# ingress: skipped" in output


def test_invalid_rgd_exits_1_with_the_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rgd = yaml.safe_load((ROOT / EXAMPLES["nginxapp"][0]).read_text())
    rgd["spec"]["resources"][0]["template"]["spec"]["replicas"] = "${schema.spec.nope}"
    path = tmp_path / "rgd.yaml"
    path.write_text(yaml.safe_dump(rgd))
    assert main(["render", "-f", str(path), "-i", str(ROOT / EXAMPLES["nginxapp"][1])]) == 1
    assert "nope" in capsys.readouterr().err


def test_missing_required_argument_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["render"])
    assert exit_info.value.code == 2
    capsys.readouterr()
    # An RGD renders only for an instance; -i is optional only for a Graph, which renders itself.
    assert main(["render", "-f", str(ROOT / "tests/cli/data/small-rgd.yaml")]) == 2
    assert "-i/--instance" in capsys.readouterr().err
