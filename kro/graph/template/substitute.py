"""kro.graph.template.substitute: put evaluated values back into a copy of a template.

The template is never mutated (it is shared by every instance of the RGD); the result is a deep
copy with each templated field replaced and everything else, literal text included, preserved.

Values per field path:
    standalone field      the expression's value, any JSON type (C-02)
    string template       the rendered string (the value of `Template.cel_source()`), or one
                          string per expression, which is spliced between the literal parts
    `omit` sentinel       (standalone only) deletes the map key, or removes the list element so
                          the list shrinks (C-31); deletions happen after all replacements, so
                          list indexes in `values` always refer to the original template

Fields absent from `values` stay as written (upstream resolves what it can and reports the
rest as pending; deciding that is the caller's job).

Public API:
    substitute(template, values, *, omit=None) -> Any
        `values` keys are FieldPath or its text form; raises FieldPathError / SubstitutionError
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from kro.graph.errors import FieldPathError, SubstitutionError
from kro.graph.template.fieldpath import FieldPath, Segment
from kro.graph.template.scanner import parse_template


def substitute(
    template: Any,
    values: Mapping[FieldPath, Any] | Mapping[str, Any],
    *,
    omit: object | None = None,
) -> Any:
    """Return a deep copy of `template` with the fields in `values` filled in.

    `omit` is the engine's omit() sentinel, compared by identity; None disables omission.
    """
    result = copy.deepcopy(template)
    omitted: list[FieldPath] = []
    for key, value in values.items():
        path = key if isinstance(key, FieldPath) else FieldPath.parse(key)
        current = _get(result, path)
        new = _resolve(path, current, value, omit)
        if new is omit and omit is not None:
            omitted.append(path)
        elif not path.segments:
            result = new
        else:
            _set(result, path, new)
    # Deepest and highest-index paths first, so earlier deletions never shift later ones.
    for path in sorted(omitted, key=_deletion_order, reverse=True):
        if not path.segments:
            raise SubstitutionError("omit() cannot replace the whole object", field_path="")
        parent = _get(result, FieldPath(path.segments[:-1]))
        del parent[path.segments[-1]]
    return result


def _resolve(path: FieldPath, current: Any, value: Any, omit: object | None) -> Any:
    if not isinstance(current, str):
        raise SubstitutionError(f"field {path} is not a templated string", field_path=str(path))
    tmpl = parse_template(current)
    if not tmpl.has_expressions:
        raise SubstitutionError(f"field {path} holds no expression", field_path=str(path))
    if tmpl.is_standalone:
        return value
    if omit is not None and value is omit:
        raise SubstitutionError(
            "omit() can only be the whole value of a field, not part of a string template",
            field_path=str(path),
            expression=current,
        )
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence):
        try:
            return tmpl.render(value)
        except SubstitutionError as err:
            raise err.with_context(field_path=str(path)) from None
    raise SubstitutionError(
        f"string template at {path} needs a string or one string per expression, "
        f"got {type(value).__name__}",
        field_path=str(path),
        expression=current,
    )


def _get(obj: Any, path: FieldPath) -> Any:
    node = obj
    for depth, seg in enumerate(path.segments):
        try:
            if isinstance(seg, int):
                if not isinstance(node, list):
                    raise TypeError
                node = node[seg]
            else:
                if not isinstance(node, dict):
                    raise TypeError
                node = node[seg]
        except (KeyError, IndexError, TypeError):
            where = FieldPath(path.segments[: depth + 1])
            raise FieldPathError(
                f"field path {path} not found in template (no {where})", field_path=str(path)
            ) from None
    return node


def _set(obj: Any, path: FieldPath, value: Any) -> None:
    parent = _get(obj, FieldPath(path.segments[:-1]))
    parent[path.segments[-1]] = value


def _deletion_order(path: FieldPath) -> tuple[tuple[int, Segment], ...]:
    # Ints and strs never share a position under the same parent; the leading tag keeps the
    # comparison total when they meet under different parents.
    return tuple((0, s) if isinstance(s, int) else (1, s) for s in path.segments)
