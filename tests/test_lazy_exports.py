"""Packages that export lazily (kro._lazy): the same names as before, each imported on first use.

`kro controller` starts in about half the memory it took when `import kro.runtime.gvk` loaded the
HTTP client, the probe server and pydantic with it; these tests keep the surface whole and the
imports light.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

LAZY = ("kro.runtime", "kro.api", "kro.cel", "kro.controllers.instance")


def _run(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return out.stdout.strip()


def _init(package: str) -> ast.Module:
    module = importlib.import_module(package)
    return ast.parse(Path(str(module.__file__)).read_text())


def _type_checking_imports(package: str) -> dict[str, tuple[str, str]]:
    """{exported name: (absolute module, attribute or "" for a submodule)} from the
    `if TYPE_CHECKING:` block, the list readers and type checkers see."""
    found: dict[str, tuple[str, str]] = {}
    for node in ast.walk(_init(package)):
        if not (isinstance(node, ast.ImportFrom) and node.module != "typing"):
            continue
        if node.module == "kro._lazy":
            continue
        base = package + ("." + node.module if node.level and node.module else "")
        if not node.level:
            base = str(node.module)
        for alias in node.names:
            exported = alias.asname or alias.name
            if base == package:
                found[exported] = (f"{package}.{alias.name}", "")
            else:
                found[exported] = (base, alias.name)
    return found


@pytest.mark.parametrize("package", LAZY)
def test_the_lazy_table_matches_the_type_checking_imports(package: str) -> None:
    module = importlib.import_module(package)
    declared = _type_checking_imports(package)
    assert set(declared) == set(module.__all__)
    for name, (source, attribute) in declared.items():
        target = importlib.import_module(source)
        expected = target if not attribute else getattr(target, attribute)
        assert getattr(module, name) is expected, name


@pytest.mark.parametrize("package", LAZY)
def test_no_exported_name_shadows_another_submodule(package: str) -> None:
    """Importing submodule `x` sets the package attribute `x`: an exported function named like a
    submodule would be replaced by the module whenever the submodule loads first."""
    module = importlib.import_module(package)
    submodules = {info.name for info in pkgutil.iter_modules(module.__path__)}
    for name, (source, attribute) in _type_checking_imports(package).items():
        if name in submodules:
            assert (source, attribute) == (f"{package}.{name}", ""), name


@pytest.mark.parametrize("package", LAZY)
def test_dir_lists_every_export_and_unknown_names_fail(package: str) -> None:
    module = importlib.import_module(package)
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        _ = module.no_such_name


def test_star_import_gives_every_export() -> None:
    namespace: dict[str, object] = {}
    exec("from kro.runtime import *", namespace)
    import kro.runtime

    assert set(kro.runtime.__all__) <= set(namespace)


def test_a_submodule_is_an_attribute_after_importing_the_package() -> None:
    """As when the package imported everything: `import kro.runtime; kro.runtime.store`."""
    code = "import kro.runtime\nprint(kro.runtime.store.object_key.__module__)"
    assert _run(code) == "kro.runtime.store"


@pytest.mark.parametrize(
    ("statement", "absent"),
    [
        ("import kro.runtime", ("aiohttp", "pydantic", "yaml", "prometheus_client")),
        ("import kro.runtime.gvk", ("aiohttp", "pydantic")),
        ("from kro.runtime import GVR, Request, WorkQueue", ("aiohttp", "pydantic")),
        ("from kro.runtime.reader import CachedReader", ("pydantic",)),
        ("import kro.api.names, kro.api.conditions", ("pydantic", "yaml")),
        ("import kro.cel", ("cel_expr_python", "google.protobuf")),
        ("from kro.graph.model import Graph", ("kro.cel.engine", "cel_expr_python", "yaml")),
        # What `kro controller` imports to start: PyYAML only once a YAML kubeconfig is read.
        ("import kro.controllers.app, kro.runtime.kubeconfig", ("yaml",)),
        # A manager (and its client) loads pydantic only once a typed model is used: 8 MiB.
        ("from kro.runtime.manager import Manager", ("pydantic",)),
        ("from kro.runtime.builder import ControllerBuilder", ("pydantic",)),
        ("import kro.controllers.app", ("pydantic",)),
        ("import kro.cli.controller", ("pydantic",)),
        ("from kro.graph.options import BuildOptions", ("kro.graph.builder", "kro.cel")),
        ("import kro.controllers.instance.labels", ("kro.controllers.instance.reconciler",)),
    ],
)
def test_importing_a_light_name_loads_nothing_heavy(
    statement: str, absent: tuple[str, ...]
) -> None:
    code = f"import sys\n{statement}\nprint(sorted(m for m in {absent!r} if m in sys.modules))"
    assert _run(code) == "[]"


def test_lazy_imports_show_in_importtime() -> None:
    """`python -X importtime` (bench/bench_startup.py) must see modules the package loads late."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import kro.runtime; kro.runtime.Client"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    names = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines()}
    assert {"kro.runtime.client", "aiohttp"} <= names


def test_the_public_names_are_the_submodule_objects() -> None:
    import kro.api
    import kro.cel
    import kro.runtime

    modules: list[tuple[ModuleType, str, str]] = [
        (kro.runtime, "configure_logging", "kro.runtime.logging"),
        (kro.api, "parse_resource_graph_definition", "kro.api.v1alpha1"),
        (kro.cel, "CelEnvironment", "kro.cel.engine"),
    ]
    for package, name, module in modules:
        assert getattr(package, name).__module__ == module
