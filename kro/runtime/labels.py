"""kro.runtime.labels: label selectors as the API server reads them, evaluated in process.

The cache-backed reader answers `list(..., label_selector=...)` from an unfiltered informer, and
`predicates.has_labels` filters events; both must agree with the server on what a selector
means, or a controller would see different objects from its cache than from a LIST. The grammar
is the API server's (k8s.io/apimachinery/pkg/labels): comma-separated requirements, all of which
must hold:

    key=value  key==value  key!=value  key  !key  key in (a,b)  key notin (a,b)

`key!=value` and `key notin (...)` also match objects without the key, as on the server.
A selector this module cannot parse raises `ValueError`; the reader then asks the server.

`implies(query, base)` tells whether every object a query selects is also selected by `base`,
i.e. whether an informer filtered by `base` holds all the answers to `query` (conservatively:
identical requirements, and `key=value` / `key in (...)` imply `key`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

Matcher = Callable[[Mapping[str, str]], bool]

_SET = re.compile(r"^\s*(\S+)\s+(in|notin)\s*\(([^()]*)\)\s*$")


def _split(selector: str) -> list[str]:
    """Requirements split on commas outside parentheses."""
    parts: list[str] = []
    depth, start = 0, 0
    for i, char in enumerate(selector):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ')' in label selector {selector!r}")
        elif char == "," and depth == 0:
            parts.append(selector[start:i])
            start = i + 1
    if depth:
        raise ValueError(f"unbalanced '(' in label selector {selector!r}")
    parts.append(selector[start:])
    return [p.strip() for p in parts if p.strip()]


def _requirement(text: str) -> Matcher:
    found = _SET.match(text)
    if found:
        key, op, raw = found.groups()
        values = frozenset(v.strip() for v in raw.split(",") if v.strip())
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    for op in ("!=", "==", "="):
        key, sep, value = text.partition(op)
        if sep:
            key, value = key.strip(), value.strip()
            if not key or any(c in value for c in "!=()"):
                raise ValueError(f"cannot parse label requirement {text!r}")
            if op == "!=":
                return lambda labels: labels.get(key) != value
            return lambda labels: labels.get(key) == value
    if text.startswith("!"):
        key = text[1:].strip()
        _check_key(key, text)
        return lambda labels: key not in labels
    _check_key(text, text)
    return lambda labels: text in labels


def _check_key(key: str, text: str) -> None:
    if not key or any(c in key for c in " !=()"):
        raise ValueError(f"cannot parse label requirement {text!r}")


def parse_selector(selector: str) -> Matcher:
    """A function of an object's labels that says whether `selector` selects it.

    The empty selector selects everything, as on the server.
    """
    requirements = [_requirement(part) for part in _split(selector)]
    return lambda labels: all(req(labels) for req in requirements)


def implies(query: str, base: str) -> bool:
    """Whether every object `query` selects is selected by `base` (False when unsure)."""
    have = set(_split(query))
    for requirement in _split(base):
        if requirement in have:
            continue
        if _is_key(requirement) and any(_requires_key(r, requirement) for r in have):
            continue
        return False
    return True


def _is_key(requirement: str) -> bool:
    return not any(c in requirement for c in " !=()")


def _requires_key(requirement: str, key: str) -> bool:
    """Does `requirement` only select objects that have `key`?"""
    found = _SET.match(requirement)
    if found:
        return found.group(1) == key and found.group(2) == "in"
    for op in ("==", "="):
        name, sep, _ = requirement.partition(op)
        if sep and not name.endswith("!"):
            return name.strip() == key
    return False
