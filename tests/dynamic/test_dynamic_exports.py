"""kro.dynamic's public surface and its contract: generic, depending only on kro.runtime."""

from __future__ import annotations

import ast
from pathlib import Path

import kro.dynamic

PACKAGE = Path(kro.dynamic.__file__).parent


def test_all_is_sorted_and_complete() -> None:
    assert kro.dynamic.__all__ == sorted(kro.dynamic.__all__)
    for name in kro.dynamic.__all__:
        assert hasattr(kro.dynamic, name), name


def test_package_docstring_states_the_contract() -> None:
    assert kro.dynamic.__doc__ is not None
    assert "Must not import" in kro.dynamic.__doc__


def _imports(path: Path) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
    return modules


def test_depends_only_on_kro_runtime() -> None:
    for path in PACKAGE.glob("*.py"):
        kro_imports = {m for m in _imports(path) if m == "kro" or m.startswith("kro.")}
        foreign = {m for m in kro_imports if not m.startswith(("kro.runtime", "kro.dynamic"))}
        assert not foreign, f"{path.name} imports {foreign}"


def test_reads_no_kro_label() -> None:
    for path in PACKAGE.glob("*.py"):
        assert "kro.run/" not in path.read_text(), path.name
