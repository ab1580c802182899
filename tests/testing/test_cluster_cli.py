"""`python -m kro.testing.cluster`: `--dir` is accepted before the subcommand and after it (the
way docs/runtime.md and people write it), and names the directory the command acts on."""

from __future__ import annotations

from pathlib import Path

import pytest

from kro.testing import cluster


@pytest.mark.parametrize("before", [True, False], ids=["before", "after"])
def test_dir_names_the_state_directory_on_either_side_of_the_command(
    before: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--dir", str(tmp_path), "status"] if before else ["status", "--dir", str(tmp_path)]
    assert cluster.main(argv) == 0
    assert capsys.readouterr().out == f"no cluster running in {tmp_path}\n"


def test_down_without_a_cluster_says_where_it_looked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cluster.main(["down", "--dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"no cluster running in {tmp_path}\n"
