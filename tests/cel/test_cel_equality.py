"""kro.cel.equality: CEL's heterogeneous equality on converted values, and the equality
upstream's library types and list types define."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from google.protobuf import timestamp_pb2

from kro.cel import equality
from kro.cel.lib_quantity import quantity
from kro.cel.lib_semver import semver

STAMP = timestamp_pb2.Timestamp(seconds=0)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        (1, 1.0, True),  # numbers compare by value across kinds
        (True, 1, False),  # a bool is never a number
        (float("nan"), float("nan"), False),
        (b"a", bytearray(b"a"), True),
        ("a", b"a", False),
        ([1, [2]], [1.0, [2]], True),
        ({"a": [1]}, {"a": [1]}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        (STAMP, EPOCH, True),
        (None, None, True),
        (None, 0, False),
        (quantity("1Gi"), quantity("1073741824"), True),
        (quantity("1Gi"), semver("1.0.0"), False),
        (semver("1.0.0+a"), semver("1.0.0+b"), True),
        ([quantity("1k")], [quantity("1000")], True),
    ],
)
def test_cel_equal(left: Any, right: Any, expected: bool) -> None:
    assert equality.cel_equal(left, right) is expected
    assert equality.cel_equal(right, left) is expected


def test_set_list_equal_ignores_order_only() -> None:
    assert equality.set_list_equal(["a", "b"], ["b", "a"])
    assert equality.set_list_equal([1, 2], [2.0, 1.0])
    assert not equality.set_list_equal([True], [1])
    assert not equality.set_list_equal(["a"], ["a", "b"])
    assert equality.set_list_equal([{"k": 1}], [{"k": 1}])  # not hashable: compared pairwise


def test_map_list_equal_matches_elements_by_key() -> None:
    left = [{"name": "a", "port": 1}, {"name": "b", "port": 2}]
    assert equality.map_list_equal(left, list(reversed(left)), ["name"])
    assert not equality.map_list_equal(left, [left[0], {"name": "b", "port": 3}], ["name"])
    assert not equality.map_list_equal(left, [left[0], {"name": "c", "port": 2}], ["name"])
