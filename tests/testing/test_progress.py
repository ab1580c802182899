"""Progress lines come every interval, not before the first one, and the interval is sane."""

from __future__ import annotations

import pytest

from kro.testing import progress


def test_ticker_is_due_once_per_interval() -> None:
    now = [100.0]
    ticker = progress.Ticker(10.0, clock=lambda: now[0])
    seen = []
    for _ in range(35):
        now[0] += 1.0
        seen.append(ticker.due())
    assert seen.count(True) == 3
    assert seen.index(True) == 9  # at 110 s: a wait that ends sooner says nothing
    assert ticker.elapsed_s() == 35.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, 10.0), ("2.5", 2.5), ("0", 10.0), ("-1", 10.0), ("soon", 10.0)],
    ids=["default", "set", "zero", "negative", "garbage"],
)
def test_interval_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, value: str | None, expected: float
) -> None:
    if value is None:
        monkeypatch.delenv("KRO_PROGRESS_INTERVAL_S", raising=False)
    else:
        monkeypatch.setenv("KRO_PROGRESS_INTERVAL_S", value)
    assert progress.interval_s() == expected


@pytest.mark.parametrize(("seconds", "text"), [(0.4, "0s"), (59, "59s"), (250, "4m10s")])
def test_durations_are_short(seconds: float, text: str) -> None:
    assert progress.format_duration(seconds) == text
