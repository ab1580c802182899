"""docs/metrics.md lists every metric family kro exports: each name passed to a provider's
`counter`, `gauge`, `histogram` or `callback_gauge` (or to a StateCounts) anywhere under kro/
appears in it, in backquotes."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "metrics.md").read_text()
CREATED = re.compile(
    r"(?:\.(?:counter|gauge|histogram|callback_gauge)|StateCounts)\(\s*(?:provider,\s*)?"
    r"\"([a-z][a-z0-9_]*)\"",
    re.DOTALL,
)


def _exported() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "kro").rglob("*.py"):
        if "testing" in path.parts:
            continue
        names |= set(CREATED.findall(path.read_text()))
    return names


def test_the_scan_finds_the_families() -> None:
    found = _exported()
    assert {"instance_errors_total", "instances_by_state", "rgds_by_state"} <= found
    assert {"workqueue_depth", "rest_client_requests_total", "cel_expr_eval_total"} <= found
    assert len(found) > 70


def test_every_family_is_documented() -> None:
    missing = sorted(name for name in _exported() if f"`{name}`" not in DOC)
    assert missing == []
