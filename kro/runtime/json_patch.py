"""kro.runtime.json_patch: RFC 6902 JSON patches computed from two versions of a document.

A mutating admission webhook answers with a JSON patch, never with the mutated object; the
defaulting handlers of kro.runtime.admission change an object in place, and this module turns
"before" and "after" into the patch the API server applies. A library (`jsonpatch` on PyPI)
could do it, but the part needed here is small: objects are walked key by key, lists index by
index (a longer or shorter list gains or loses elements at its end), anything else is replaced.
The patch is correct rather than minimal: inserting at the head of a list replaces every
element after it, which costs bytes, never correctness.

JSON equality is stricter than Python's: `True == 1` and `1 == 1.0` in Python, but a boolean, an
integer and a float are different JSON values (a CRD's schema may accept one and refuse the
other), so a change of type is a change.

`apply` is the other half, enough for the operations `diff` produces (add, remove, replace):
tests check a patch by applying it, and kro.runtime.admission replays the changes of a typed
model onto the raw object (`lenient=True` turns a replace of a missing member into an add and
skips the removal of one: a model may show fields the raw object never had, filled by defaults).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

__all__ = ["PatchError", "apply", "diff", "pointer", "same"]

Operation = dict[str, Any]


class PatchError(ValueError):
    """A patch does not fit the document it is applied to."""


def pointer(path: Sequence[str | int]) -> str:
    """The JSON pointer (RFC 6901) of `path`: `["metadata", "labels", "a/b"]` ->
    `/metadata/labels/a~1b`."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def _parse(pointer_: str) -> list[str]:
    if pointer_ == "":
        return []
    if not pointer_.startswith("/"):
        raise PatchError(f"{pointer_!r} is not a JSON pointer")
    return [part.replace("~1", "/").replace("~0", "~") for part in pointer_[1:].split("/")]


def same(a: Any, b: Any) -> bool:
    """JSON equality: equal values of the same JSON type, all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(value, b[key]) for key, value in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def diff(before: Any, after: Any) -> list[Operation]:
    """The operations that turn `before` into `after` (both JSON-ready values)."""
    operations: list[Operation] = []
    _diff(before, after, [], operations)
    return operations


def _diff(before: Any, after: Any, path: list[str | int], out: list[Operation]) -> None:
    if isinstance(before, dict) and isinstance(after, dict):
        _diff_objects(before, after, path, out)
    elif isinstance(before, list) and isinstance(after, list):
        _diff_lists(before, after, path, out)
    elif not same(before, after):
        out.append({"op": "replace", "path": pointer(path), "value": after})


def _diff_objects(
    before: dict[str, Any], after: dict[str, Any], path: list[str | int], out: list[Operation]
) -> None:
    for key in before:
        if key not in after:
            out.append({"op": "remove", "path": pointer([*path, key])})
    for key, value in after.items():
        if key not in before:
            out.append({"op": "add", "path": pointer([*path, key]), "value": value})
        else:
            _diff(before[key], value, [*path, key], out)


def _diff_lists(
    before: list[Any], after: list[Any], path: list[str | int], out: list[Operation]
) -> None:
    common = min(len(before), len(after))
    for index in range(common):
        _diff(before[index], after[index], [*path, index], out)
    for index in range(common, len(after)):
        out.append({"op": "add", "path": pointer([*path, index]), "value": after[index]})
    for index in range(len(before) - 1, common - 1, -1):  # from the end: indexes hold
        out.append({"op": "remove", "path": pointer([*path, index])})


def apply(document: Any, operations: Sequence[Operation], *, lenient: bool = False) -> Any:
    """`document` with `operations` (add, remove, replace) applied; the input is not changed.
    PatchError when an operation does not fit (unless `lenient`, see the module doc)."""
    result = copy.deepcopy(document)
    for operation in operations:
        op, parts = operation.get("op"), _parse(str(operation.get("path", "")))
        if op not in ("add", "remove", "replace"):
            raise PatchError(f"unsupported operation {op!r}")
        if not parts:
            if op == "remove":
                raise PatchError("cannot remove the whole document")
            result = copy.deepcopy(operation["value"])
            continue
        parent = _walk(result, parts[:-1], operation)
        if parent is None:
            if lenient:
                continue
            raise PatchError(f"{operation['path']}: the parent does not exist")
        _apply_one(parent, op, parts[-1], operation, lenient)
    return result


def _walk(document: Any, parts: list[str], operation: Operation) -> Any:
    node = document
    for part in parts:
        if isinstance(node, dict):
            if part not in node:
                return None
            node = node[part]
        elif isinstance(node, list):
            index = _index(part, len(node) - 1, operation)
            node = node[index]
        else:
            return None
    return node if isinstance(node, dict | list) else None


def _index(part: str, last: int, operation: Operation) -> int:
    if not part.isdigit() or (len(part) > 1 and part.startswith("0")):
        raise PatchError(f"{operation['path']}: {part!r} is not an array index")
    index = int(part)
    if index > last:
        raise PatchError(f"{operation['path']}: index {index} is out of range")
    return index


def _apply_one(parent: Any, op: str, key: str, operation: Operation, lenient: bool) -> None:
    value = copy.deepcopy(operation.get("value"))
    if isinstance(parent, dict):
        if op == "add" or (op == "replace" and (key in parent or lenient)):
            parent[key] = value
        elif key in parent:  # remove
            del parent[key]
        elif not lenient:
            raise PatchError(f"{operation['path']}: no such member")
        return
    if op == "add":
        index = len(parent) if key == "-" else _index(key, len(parent), operation)
        parent.insert(index, value)
        return
    index = _index(key, len(parent) - 1, operation)
    if op == "replace":
        parent[index] = value
    else:
        del parent[index]
