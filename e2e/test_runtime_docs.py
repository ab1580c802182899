"""docs/runtime.md's examples marked `<!-- doctest:e2e -->` run as they stand on the real
control plane, with the plugin's fixtures they name (the unit examples run in
tests/runtime/test_runtime_docs.py, which shares the extraction: tests/runtime/docexamples.py).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from kro.testing.pytest_plugin import ClusterHandle


def _docexamples() -> ModuleType:
    path = Path(__file__).resolve().parents[1] / "tests" / "runtime" / "docexamples.py"
    spec = importlib.util.spec_from_file_location("docexamples", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


DOCS = _docexamples()
E2E = DOCS.examples("e2e")


def test_the_page_has_an_example_for_the_real_control_plane() -> None:
    assert E2E


@pytest.mark.parametrize("example", E2E, ids=lambda e: e.id)
async def test_the_example_runs_as_it_stands(
    example: object, kube_cluster: ClusterHandle, kube_namespace: str
) -> None:
    fixtures = {"kube_cluster": kube_cluster, "kube_namespace": kube_namespace}
    assert await DOCS.run(example, fixtures)
