"""Counts the example operators' lines next to kopf's and controller-runtime's, and writes the
comparison in docs/runtime.md from those counts, so the table can never drift from the code.

What counts as a line of code: a line that holds part of a statement. Blank lines, comment-only
lines and docstrings (module, class and function) do not count; every line of a statement that
spans several lines does. For Go: every non-blank line that is not a `//` comment. The same
rules apply to the three implementations of each operator: the example in this directory, its
kopf sketch (compare/<name>_kopf.py) and its controller-runtime sketch (compare/<name>.go).

    python examples/runtime/count_lines.py            # print the counts
    python examples/runtime/count_lines.py --write    # regenerate the parts of docs/runtime.md
    python examples/runtime/count_lines.py --check    # exit 1 if docs/runtime.md is stale or an
                                                      # example exceeds 1.3x kopf's code lines

docs/runtime.md marks what this script owns: the table between `<!-- runtime-sizes:begin -->`
and `<!-- runtime-sizes:end -->`, and each `<!-- code:FILE -->` ... `<!-- /code -->` block (the
file's code, with the line count in its summary).
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCS = HERE.parents[1] / "docs" / "runtime.md"
MAX_RATIO = 1.3
"""An example may take at most this many times the code lines of the same operator in kopf."""

OPERATORS = (
    ("configmap_labeller", "ConfigMap labeller (predicates)"),
    ("secret_replicator", "Secret replicator (finalizer, map function)"),
    ("website_operator", "Website (typed CRD, owned Deployment, conditions)"),
    ("graph_operator", "Static site (kro's graph and ApplySet embedded)"),
)
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
         tokenize.ENCODING, tokenize.ENDMARKER}  # fmt: skip


@dataclass(frozen=True)
class Size:
    lines: int
    code: int

    def __str__(self) -> str:
        return f"{self.lines} lines, {self.code} of code"


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def python_size(source: str) -> Size:
    code: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in _SKIP:
            code.update(range(token.start[0], token.end[0] + 1))
    code -= _docstring_lines(ast.parse(source))
    return Size(len(source.splitlines()), len(code))


def go_size(source: str) -> Size:
    lines = source.splitlines()
    code = [line for line in lines if line.strip() and not line.strip().startswith("//")]
    return Size(len(lines), len(code))


def size(path: Path) -> Size:
    source = path.read_text()
    return go_size(source) if path.suffix == ".go" else python_size(source)


def without_docstring(path: Path) -> str:
    """The example as the docs show it: the module docstring left out (the prose says it)."""
    source = path.read_text()
    tree = ast.parse(source)
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        source = "\n".join(source.splitlines()[first.end_lineno or 0 :]).lstrip("\n") + "\n"
    return source


def sizes() -> list[tuple[str, str, Size, Size | None, Size | None]]:
    rows = []
    for name, title in OPERATORS:
        go, kopf = HERE / "compare" / f"{name}.go", HERE / "compare" / f"{name}_kopf.py"
        rows.append((
            name,
            title,
            size(HERE / f"{name}.py"),
            size(go) if go.exists() else None,
            size(kopf) if kopf.exists() else None,
        ))  # fmt: skip
    return rows


def table() -> str:
    out = [
        "| operator | kro.runtime | controller-runtime | kopf | kro.runtime / kopf (code) |",
        "|---|---|---|---|---|",
    ]
    for _name, title, ours, go, kopf in sizes():
        ratio = f"{ours.code / kopf.code:.2f}" if kopf else "no kopf equivalent"
        out.append(f"| {title} | {ours} | {go or '-'} | {kopf or '-'} | {ratio} |")
    return "\n".join(out)


_CODE = re.compile(r"<!-- code:(?P<file>[\w./]+) -->\n.*?<!-- /code -->", re.S)
_TABLE = re.compile(r"(<!-- runtime-sizes:begin -->\n).*?(<!-- runtime-sizes:end -->)", re.S)
_TITLES = {".go": "controller-runtime", "_kopf.py": "kopf"}


def _code_block(match: re.Match[str]) -> str:
    file = match["file"]
    path = HERE / file
    language = "go" if path.suffix == ".go" else "python"
    if "/" not in file:  # one of our examples: shown open, without its docstring
        body = without_docstring(path)
        return f"<!-- code:{file} -->\n```{language}\n{body}```\n<!-- /code -->"
    who = next(title for suffix, title in _TITLES.items() if file.endswith(suffix))
    return (
        f"<!-- code:{file} -->\n<details><summary>{who} ({size(path)})</summary>\n\n"
        f"```{language}\n{path.read_text()}```\n\n</details>\n<!-- /code -->"
    )


def render(docs: str) -> str:
    docs = _TABLE.sub(lambda m: f"{m[1]}{table()}\n{m[2]}", docs)
    return _CODE.sub(_code_block, docs)


def too_long() -> list[str]:
    return [
        f"{name}: {ours.code} code lines > {MAX_RATIO} x kopf's {kopf.code}"
        for name, _title, ours, _go, kopf in sizes()
        if kopf is not None and ours.code > MAX_RATIO * kopf.code
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="regenerate docs/runtime.md parts")
    parser.add_argument("--check", action="store_true", help="fail if stale or too long")
    args = parser.parse_args(argv)
    print(table())
    docs = DOCS.read_text()
    if args.write:
        DOCS.write_text(render(docs))
    if args.check:
        problems = too_long()
        if render(docs) != docs:
            problems.append(f"{DOCS.name} is stale: run {Path(__file__).name} --write")
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
