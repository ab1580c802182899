"""The examples docs/runtime.md marks as runnable, as modules a test can run.

A block is a ```python fence right after a `<!-- doctest -->` line (run by the unit tests,
tests/runtime/test_runtime_docs.py) or a `<!-- doctest:e2e -->` line (run on the real control
plane, e2e/test_runtime_docs.py). Each is a complete module: its `test_*` functions are the
example's proof, called with the fixtures they name.
"""

from __future__ import annotations

import inspect
import re
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DOC = Path(__file__).resolve().parents[2] / "docs" / "runtime.md"
_BLOCK = re.compile(
    r"^<!-- doctest(?::(?P<where>[\w-]+))? -->\n```python\n(?P<code>.*?)^```", re.M | re.S
)


@dataclass(frozen=True)
class Example:
    line: int  # of the fence, in docs/runtime.md
    section: str  # the heading above it
    where: str  # "unit" or "e2e"
    code: str

    @property
    def id(self) -> str:
        return f"line{self.line}-{re.sub(r'[^a-z0-9]+', '-', self.section.lower()).strip('-')}"


def examples(where: str, text: str | None = None) -> list[Example]:
    text = DOC.read_text() if text is None else text
    found = []
    for match in _BLOCK.finditer(text):
        line = text.count("\n", 0, match.start()) + 2
        kind = match["where"] or "unit"
        if kind == where:
            found.append(Example(line, _heading(text[: match.start()]), kind, match["code"]))
    return found


def _heading(before: str) -> str:
    """The last Markdown heading of `before`, fenced code (shell comments) left out."""
    heading, fenced = "", False
    for line in before.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (found := re.match(r"#+ (.+)$", line)):
            heading = found[1]
    return heading


async def run(example: Example, fixtures: Mapping[str, Any] | None = None) -> list[str]:
    """Execute the example as a module and call each of its tests; returns their names."""
    name = f"runtime_md_line{example.line}"
    module = types.ModuleType(name)
    module.__file__ = f"{DOC}:{example.line}"
    sys.modules[name] = module  # dataclasses and pydantic models look their module up
    try:
        exec(compile(example.code, f"docs/runtime.md:{example.line}", "exec"), module.__dict__)
        tests = [
            (key, value)
            for key, value in vars(module).items()
            if key.startswith("test_") and inspect.isfunction(value)
        ]
        assert tests, f"the example at line {example.line} has no test_*: it proves nothing"
        for _key, test in tests:
            wanted = inspect.signature(test).parameters
            result = test(**{p: (fixtures or {})[p] for p in wanted})
            if inspect.isawaitable(result):
                await result
        return [key for key, _ in tests]
    finally:
        del sys.modules[name]
