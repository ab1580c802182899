"""kro.cel.equality: CEL's `==` on values that have crossed into Python, with the equality
upstream's value types define for themselves.

The engine compares library values (one-field protobuf messages, see `opaque`) field by
field, but cel-go asks the value: a Kubernetes Quantity is equal to another of the same
amount (`quantity("1Gi") == quantity("1073741824")`, `resource.Quantity.Equal`), a Semver
to one of the same precedence (`semver("1.0.0+a") == semver("1.0.0+b")`, blang/semver `EQ`),
and a list read from a field whose schema says `x-kubernetes-list-type: set` or `map`
compares as a set or a keyed map (Kubernetes' unstructured list values, C-34). `lowering`
rewrites the comparisons where the checker knows such values meet into calls of the
functions here; library functions that compare elements (`indexOf`) use `cel_equal` too.

Everything else follows CEL's heterogeneous equality: numbers compare by value across int,
uint and double; values of different types are unequal (`true != 1`); NaN equals nothing;
lists and maps compare element by element.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from google.protobuf import duration_pb2, timestamp_pb2
from google.protobuf.message import Message

from kro.cel import lib_quantity, lib_semver
from kro.cel.opaque import Quantity, Semver

_NUMBER: Final = (int, float)


def cel_equal(left: Any, right: Any) -> bool:
    """`left == right` as CEL (and upstream's library types) define it."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, _NUMBER) and isinstance(right, _NUMBER):
        if isinstance(left, float) and math.isnan(left):
            return False
        return left == right
    if isinstance(left, (bytes, bytearray)) and isinstance(right, (bytes, bytearray)):
        return bytes(left) == bytes(right)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(
            cel_equal(a, b) for a, b in zip(left, right, strict=True)
        )
    if isinstance(left, dict) and isinstance(right, dict):
        return _maps_equal(left, right)
    if isinstance(left, Message) and isinstance(right, Message):
        return _messages_equal(left, right)
    left, right = _temporal(left), _temporal(right)
    if type(left) is not type(right):
        return False
    return bool(left == right)


def _maps_equal(left: Mapping[Any, Any], right: Mapping[Any, Any]) -> bool:
    if len(left) != len(right):
        return False
    return all(key in right and cel_equal(value, right[key]) for key, value in left.items())


def _messages_equal(left: Message, right: Message) -> bool:
    if type(left) is not type(right):
        return False
    if isinstance(left, Quantity):
        return lib_quantity.compare_to(left, right) == 0
    if isinstance(left, Semver):
        return lib_semver.compare_to(left, right) == 0
    return bool(left == right)


def _temporal(value: Any) -> Any:
    """Timestamps and durations as datetime / timedelta, whichever form they arrived in."""
    if isinstance(value, timestamp_pb2.Timestamp):
        return value.ToDatetime(tzinfo=dt.UTC)
    if isinstance(value, duration_pb2.Duration):
        return value.ToTimedelta()
    return value


def equals(left: Any, right: Any) -> bool:
    """`kro.@equals`: `==` where the checker saw library values on both sides."""
    return cel_equal(left, right)


def not_equals(left: Any, right: Any) -> bool:
    return not cel_equal(left, right)


def contains(item: Any, items: list[Any]) -> bool:
    """`kro.@in`: `item in items` where the elements are library values."""
    return any(cel_equal(item, element) for element in items)


def set_list_equal(left: Sequence[Any], right: Sequence[Any]) -> bool:
    """A `list-type: set` list (left) against any list: the same size and every element of
    the set found in the other (Kubernetes' unstructuredSetList.Equal)."""
    if len(left) != len(right):
        return False
    left_keys, right_keys = _scalar_keys(left), _scalar_keys(right)
    if left_keys is not None and right_keys is not None:
        return left_keys <= right_keys
    return all(any(cel_equal(a, b) for b in right) for a in left)


def _scalar_keys(items: Sequence[Any]) -> set[tuple[bool, Any]] | None:
    """Hashable keys with CEL's equality for a list of scalars (the usual set), else None:
    numbers of any kind hash alike when equal, a bool never equals a number."""
    keys: set[tuple[bool, Any]] = set()
    for item in items:
        if isinstance(item, float) and math.isnan(item):
            return None
        if not isinstance(item, (str, int, float, bytes)):
            return None
        keys.add((isinstance(item, bool), item))
    return keys


def map_list_equal(left: Sequence[Any], right: Sequence[Any], keys: Sequence[str]) -> bool:
    """A `list-type: map` list (left) against any list: the same size, and every element of
    the other has an equal element in the map list under the same key values
    (Kubernetes' unstructuredMapList.Equal)."""
    if len(left) != len(right):
        return False
    by_key = {_map_key(e, keys): e for e in left}
    for element in right:
        found = by_key.get(_map_key(element, keys), _MISSING)
        if found is _MISSING or not cel_equal(found, element):
            return False
    return True


_MISSING: Final = object()


def _map_key(element: Any, keys: Sequence[str]) -> Any:
    if not isinstance(element, dict):
        return ("not-an-object", id(element))
    return tuple(_hashable(element.get(k)) for k in keys)


def _hashable(value: Any) -> Any:
    if isinstance(value, (list, dict, Message, bytearray)):
        return repr(value)
    return (type(value) is bool, value)
