"""The example operators stay within 1.3 times kopf's lines of code for the same operator, and
docs/runtime.md shows the sizes and the code as they are (examples/runtime/count_lines.py
generates both); plus the counting rules themselves, on sources whose counts are known."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "runtime" / "count_lines.py"


def count_lines() -> ModuleType:
    spec = importlib.util.spec_from_file_location("count_lines", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_example_is_within_the_ratio_to_kopf() -> None:
    assert count_lines().too_long() == []


def test_the_docs_show_the_current_sizes_and_code() -> None:
    script = count_lines()
    docs = script.DOCS.read_text()
    assert script.render(docs) == docs, "run python examples/runtime/count_lines.py --write"
    assert "<!-- runtime-sizes:begin -->\n| operator |" in docs


def test_docstrings_comments_and_blank_lines_are_not_code() -> None:
    source = '''"""Module docstring,
over two lines."""

import os  # a comment


# a comment line
def f(x: int) -> dict[str, int]:
    """A docstring."""
    return {
        "x": x,
    }
'''
    size = count_lines().python_size(source)
    assert size.lines == 12
    assert size.code == 5  # import, def, and the three lines of the return statement


def test_go_comments_and_blank_lines_are_not_code() -> None:
    size = count_lines().go_size("package main\n\n// comment\nfunc main() {\n}\n")
    assert (size.lines, size.code) == (5, 3)
