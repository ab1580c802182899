"""kro.cel's public surface: explicit re-exports, sorted __all__, no forbidden imports."""

from __future__ import annotations

import subprocess
import sys

import kro.cel


def test_all_is_sorted_and_complete() -> None:
    assert kro.cel.__all__ == sorted(kro.cel.__all__, key=lambda n: (not n.isupper(), n))
    for name in kro.cel.__all__:
        assert hasattr(kro.cel, name), name


def test_package_docstring_keeps_its_contract() -> None:
    doc = kro.cel.__doc__ or ""
    assert "Only this package imports the engine" in doc
    assert "Must not import: kro.graph, kro.runtime, aiohttp, kubernetes_asyncio" in doc


def test_importing_kro_cel_pulls_no_forbidden_module() -> None:
    code = (
        "import sys, kro.cel\n"
        "bad = [m for m in ('kro.graph', 'kro.runtime', 'aiohttp', 'kubernetes_asyncio',"
        " 'prometheus_client') if m in sys.modules]\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
