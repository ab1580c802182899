"""The binary cache key changes with everything that built the binaries, and only then."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kro.testing import testbin


def _component(tmp_path: Path, ldflags: str = "-s -w") -> testbin.Component:
    (tmp_path / "go.mod").write_text("module x\n")
    (tmp_path / "go.sum").write_text("")
    return testbin.Component(
        name="x",
        version="v1",
        module_dir=str(tmp_path),
        binaries=(("x", "example.com/x"),),
        ldflags=ldflags,
    )


def test_cache_key_is_stable(tmp_path: Path) -> None:
    component = _component(tmp_path)
    assert testbin.cache_key(component, "go1.26.8") == testbin.cache_key(component, "go1.26.8")


@pytest.mark.parametrize("change", ["go.sum", "ldflags", "go"], ids=str)
def test_cache_key_changes_with_inputs(tmp_path: Path, change: str) -> None:
    component = _component(tmp_path)
    before = testbin.cache_key(component, "go1.26.8")
    go = "go1.26.8"
    if change == "go.sum":
        (tmp_path / "go.sum").write_text("example.com/x v1 h1:abc\n")
    elif change == "ldflags":
        component = dataclasses.replace(component, ldflags="-s")
    else:
        go = "go1.27.3"
    assert testbin.cache_key(component, go) != before


def test_override_variable_wins_over_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "my-etcd"
    fake.write_text("")
    monkeypatch.setenv("TEST_ASSET_ETCD", str(fake))
    assert testbin.ensure(["etcd"]) == {"etcd": fake}


def test_every_wrapper_module_commits_its_go_sum() -> None:
    for component in testbin.COMPONENTS:
        assert (component.directory / "go.sum").stat().st_size > 0, component.name
        assert "tool " in (component.directory / "go.mod").read_text(), component.name
