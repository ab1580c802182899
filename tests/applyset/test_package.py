"""The package's public surface and its import boundary."""

from __future__ import annotations

import subprocess
import sys

import kro.applyset


def test_all_is_sorted_and_exported() -> None:
    names = kro.applyset.__all__
    assert names == sorted(names)
    assert all(hasattr(kro.applyset, name) for name in names)


def test_does_not_import_sibling_or_upper_layers() -> None:
    code = (
        "import sys, kro.applyset; "
        "bad = [m for m in sys.modules if m.split('.')[:2] in "
        "(['kro','graph'], ['kro','cel'], ['kro','dynamic'], ['kro','controllers'])]; "
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
