"""_engine_compat.syntax: backtick-quoted names are refused as cel-go refuses them, but only outside
string literals and comments."""

from __future__ import annotations

import pytest

from kro.cel import CelCompileError
from kro.cel._engine_compat.syntax import check


@pytest.mark.parametrize(
    "expression",
    [
        'x.a + "`"',
        "x.a + '`'",
        'x.a + """multi ` line"""',
        "x.a + r'\\`'",
        'x.a + "\\"`"',
        "x.a // a `comment`\n + 1",
        "b'`'.size()",
    ],
)
def test_backticks_in_strings_and_comments_are_fine(expression: str) -> None:
    check(expression)


@pytest.mark.parametrize(
    ("expression", "column"),
    [("x.`in`", 3), ('x["`"] + y.`a-b`', 12), ("'a'\n+ x.`b`", 5)],
)
def test_backtick_identifiers_are_refused(expression: str, column: int) -> None:
    with pytest.raises(CelCompileError) as info:
        check(expression)
    assert f":{column}: unsupported syntax '`'" in info.value.message
