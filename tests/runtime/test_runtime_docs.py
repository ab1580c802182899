"""docs/runtime.md's runnable examples run as they stand (tests/runtime/docexamples.py): every
`<!-- doctest -->` block is a complete module whose tests pass, and each capability the page
documents with one keeps it."""

from __future__ import annotations

import pytest
from docexamples import Example, examples, run

pytestmark = pytest.mark.usefixtures("no_task_leaks")

UNIT = examples("unit")


@pytest.mark.parametrize("example", UNIT, ids=lambda e: e.id)
async def test_the_example_runs_as_it_stands(example: Example) -> None:
    assert await run(example)


def test_each_capability_has_a_runnable_example() -> None:
    sections = {e.section for e in UNIT} | {e.section for e in examples("e2e")}
    assert {
        "Running an operator",
        "Events",
        "Unit tests: injected clocks, no sleeps",
        "An operator in the test's process: `kro.testing.operator`",
        "e2e tests: a real control plane with `kro.testing`",
    } <= sections


async def test_a_block_without_a_test_is_refused() -> None:
    fenced_comment = "```sh\n# not a heading\n```\n\n"
    text = f"## Somewhere\n\n{fenced_comment}<!-- doctest -->\n```python\nx = 1\n```\n"
    (example,) = examples("unit", text)
    assert example.section == "Somewhere"
    with pytest.raises(AssertionError, match="proves nothing"):
        await run(example)
