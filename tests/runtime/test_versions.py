"""resourceVersions compare as the integers the API server makes them, or not at all."""

from __future__ import annotations

import pytest

from kro.runtime.versions import not_newer, older


@pytest.mark.parametrize(
    ("version", "than", "expected"),
    [
        ("9", "10", True),  # by number: as text "9" sorts after "10"
        ("10", "9", False),
        ("10", "10", False),
        ("123456789012345678901", "123456789012345678902", True),  # beyond 64 bits
        ("", "10", None),
        ("10", "abc", None),
        ("-1", "10", None),
        ("١٢", "10", None),  # digits of another script are not decimal ASCII
    ],
)
def test_older(version: str, than: str, expected: bool | None) -> None:
    assert older(version, than) is expected


def test_not_newer() -> None:
    assert not_newer("10", "10")
    assert not_newer("9", "10")
    assert not not_newer("11", "10")
    assert not not_newer(None, "10")
    assert not not_newer("x", "10")
