"""kro.cel.lib_semver: the Kubernetes semver library (`semver`, `isSemver`, `major`, `minor`,
`patch`, `isGreaterThan`, `isLessThan`, `compareTo`), Semantic Versioning 2.0.0.

`semver(s, true)` / `isSemver(s, true)` first normalise like upstream: drop a leading `v`,
fill a missing minor/patch with 0 and strip leading zeros (`v1.02` -> `1.2.0`).
Precedence ignores build metadata, as the spec says.
"""

from __future__ import annotations

import re
from typing import Final

from google.protobuf.message import Message

from kro.cel.library import Overload
from kro.cel.opaque import Semver, make, text_of

_NUM: Final = r"(0|[1-9][0-9]*)"
_IDENT: Final = r"(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
_STRICT: Final = re.compile(
    rf"^{_NUM}\.{_NUM}\.{_NUM}(?:-({_IDENT}(?:\.{_IDENT})*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)
_CORE: Final = re.compile(r"^v?([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?(.*)$")

Version = tuple[int, int, int, tuple[str, ...], str]


def _normalize(text: str) -> str:
    match = _CORE.match(text)
    if match is None:
        return text
    major, minor, patch, rest = match.groups()
    return f"{int(major)}.{int(minor or 0)}.{int(patch or 0)}{rest}"


def parse(text: str, normalize: bool = False) -> Version:
    source = _normalize(text) if normalize else text
    match = _STRICT.match(source)
    if match is None:
        raise ValueError(f"could not parse semver {text!r}: invalid semantic version")
    major, minor, patch, pre, build = match.groups()
    return int(major), int(minor), int(patch), tuple(pre.split(".")) if pre else (), build or ""


def _text(version: Version) -> str:
    major, minor, patch, pre, build = version
    out = f"{major}.{minor}.{patch}"
    if pre:
        out += "-" + ".".join(pre)
    if build:
        out += "+" + build
    return out


def semver(text: str, normalize: bool = False) -> Message:
    return make(Semver, value=_text(parse(text, normalize)))


def is_semver(text: str, normalize: bool = False) -> bool:
    try:
        parse(text, normalize)
    except ValueError:
        return False
    return True


def _read(value: Message) -> Version:
    return parse(text_of(value))


def _compare_pre(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    if not a or not b:
        return (not a) - (not b)  # a release outranks any pre-release
    for x, y in zip(a, b, strict=False):
        if x == y:
            continue
        if x.isdigit() and y.isdigit():
            return 1 if int(x) > int(y) else -1
        if x.isdigit() != y.isdigit():
            return -1 if x.isdigit() else 1
        return 1 if x > y else -1
    return (len(a) > len(b)) - (len(a) < len(b))


def compare_to(left: Message, right: Message) -> int:
    a, b = _read(left), _read(right)
    if a[:3] != b[:3]:
        return 1 if a[:3] > b[:3] else -1
    return _compare_pre(a[3], b[3])


def is_greater_than(left: Message, right: Message) -> bool:
    return compare_to(left, right) > 0


def is_less_than(left: Message, right: Message) -> bool:
    return compare_to(left, right) < 0


def major(value: Message) -> int:
    return _read(value)[0]


def minor(value: Message) -> int:
    return _read(value)[1]


def patch(value: Message) -> int:
    return _read(value)[2]


_S: Final = "kubernetes.Semver"
OVERLOADS: Final = (
    Overload("semver", "string_to_semver", ("string",), _S, semver),
    Overload("semver", "string_bool_to_semver", ("string", "bool"), _S, semver),
    Overload("isSemver", "is_semver_string", ("string",), "bool", is_semver),
    Overload("isSemver", "is_semver_string_bool", ("string", "bool"), "bool", is_semver),
    Overload("isGreaterThan", "semver_is_greater_than", (_S, _S), "bool", is_greater_than, True),
    Overload("isLessThan", "semver_is_less_than", (_S, _S), "bool", is_less_than, True),
    Overload("compareTo", "semver_compare_to", (_S, _S), "int", compare_to, True),
    Overload("major", "semver_major", (_S,), "int", major, True),
    Overload("minor", "semver_minor", (_S,), "int", minor, True),
    Overload("patch", "semver_patch", (_S,), "int", patch, True),
)
