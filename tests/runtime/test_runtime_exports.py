"""kro.runtime's public surface: a sorted, complete `__all__`, and a package that knows no kro."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import kro.runtime

PACKAGE = Path(kro.runtime.__file__).parent


def isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: CONSTANTS, then Classes, then functions and modules
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_all_is_sorted_without_duplicates() -> None:
    assert kro.runtime.__all__ == sorted(kro.runtime.__all__, key=isort_key)
    assert len(set(kro.runtime.__all__)) == len(kro.runtime.__all__)


@pytest.mark.parametrize("name", kro.runtime.__all__)
def test_every_exported_name_imports(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from kro.runtime import {name}", namespace)
    assert namespace[name] is getattr(kro.runtime, name)


def test_every_re_export_is_listed() -> None:
    """A name imported into the package (`from .x import Y as Y`, under TYPE_CHECKING since the
    package imports lazily: tests/test_lazy_exports.py) is in __all__, and back."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level > 0
        for alias in node.names
    }
    assert imported == set(kro.runtime.__all__)


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("Client", "kro.runtime.client"),
        ("Informer", "kro.runtime.informer"),
        ("TokenBucket", "kro.runtime.ratelimit"),  # the queue's limiter, not the client throttle
        ("configure_logging", "kro.runtime.logging"),
        ("errors", "kro.runtime.errors"),
    ],
    ids=["client", "informer", "queue-token-bucket", "logging", "errors-module"],
)
def test_names_are_the_submodule_objects(name: str, module: str) -> None:
    exported = getattr(kro.runtime, name)
    imported = importlib.import_module(module)
    if name == "errors":
        assert exported is imported
    else:
        assert getattr(exported, "__module__", None) == module


def test_errors_tree_is_reachable_from_the_package() -> None:
    assert issubclass(kro.runtime.errors.Forbidden, kro.runtime.errors.KubeError)


def test_package_docstring_states_the_contract() -> None:
    doc = kro.runtime.__doc__ or ""
    assert "Must not import" in doc
    assert "docs/runtime.md" in doc


def test_imports_no_other_kro_package() -> None:
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            modules = []
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules = [node.module]
            if isinstance(node, ast.ImportFrom) and node.module == "kro" and node.level == 0:
                modules = [f"kro.{alias.name}" for alias in node.names]
            foreign = [
                m
                for m in modules
                if m.startswith("kro.") and not m.startswith("kro.runtime") and m not in LEAVES
            ]
            assert not foreign, f"{path.name} imports {foreign}"


# Modules below every layer that import nothing of kro (checked here), shared by all layers.
LEAVES = frozenset({"kro._conditions", "kro._lazy", "kro._redact"})


@pytest.mark.parametrize("leaf", sorted(LEAVES))
def test_leaf_modules_import_no_kro_package(leaf: str) -> None:
    path = PACKAGE.parent / (leaf.removeprefix("kro.") + ".py")
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] if node.level == 0 else ["(relative)"]
        else:
            continue
        assert not [n for n in names if n == "kro" or n.startswith("kro.") or n == "(relative)"]


def test_importing_the_package_does_not_load_kubernetes_asyncio() -> None:
    """config.py loads kubernetes-asyncio lazily (~0.5 s, ~40 MiB); the re-exports keep that."""
    code = "import sys, kro.runtime; print('kubernetes_asyncio' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False"
