"""kro.dynamic.selector: Kubernetes label selectors, parsed once and matched per watch event.

Selector watches (kro.dynamic.watches) test every event of a watched kind against every selector
request of that kind, so a selector is parsed once into a frozen, canonical `LabelSelector`:
requirements are sorted and de-duplicated, which makes two spellings of one selector equal (and
hash equal), so a watch request re-issued with a reordered selector is recognised as the same one.

Two input forms, one semantics (apimachinery's `labels.Parse` and `LabelSelectorAsSelector`):

* the string form: `app=web,tier!=db,env in (prod,staging),release notin (v1),gpu,!legacy`;
* the `metav1.LabelSelector` dict: `{"matchLabels": {...}, "matchExpressions": [...]}`.

The empty selector matches every object, as in Kubernetes. `NotIn` and `!=` also match objects
without the key. Only the operators a `metav1.LabelSelector` can express are supported (`Gt`/`Lt`
of the string grammar are rejected), because that is all a watch request can carry.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, cast

from kro.dynamic.errors import SelectorError

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist"]

OPERATORS: Final[frozenset[str]] = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})

_NAME: Final = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)"
_NAME_RE: Final = re.compile(_NAME)
_VALUE_RE: Final = re.compile(f"({_NAME})?")
_DNS_SUBDOMAIN_RE: Final = re.compile(
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
)
_MAX_NAME: Final = 63
_MAX_PREFIX: Final = 253
_SPECIAL: Final = frozenset("!=(),<> \t\n\r")


def _check_key(key: str) -> None:
    """A qualified name: `[prefix/]name`, prefix a DNS subdomain (<=253), name <= 63 chars."""
    prefix, sep, name = key.rpartition("/")
    if sep and (not prefix or len(prefix) > _MAX_PREFIX or not _DNS_SUBDOMAIN_RE.fullmatch(prefix)):
        raise SelectorError("invalid label key prefix", selector=key)
    if not name or len(name) > _MAX_NAME or not _NAME_RE.fullmatch(name):
        raise SelectorError("invalid label key", selector=key)


def _check_value(value: str) -> None:
    if len(value) > _MAX_NAME or not _VALUE_RE.fullmatch(value):
        raise SelectorError("invalid label value", selector=value)


@dataclass(frozen=True, slots=True, order=True)
class Requirement:
    """One condition on one label key; `values` is sorted and unique (empty for Exists kinds)."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.operator not in OPERATORS:
            raise SelectorError(f"unknown operator {self.operator!r}", selector=self.key)
        _check_key(self.key)
        values = tuple(sorted(set(self.values)))
        for value in values:
            _check_value(value)
        if self.operator in ("In", "NotIn") and not values:
            raise SelectorError(f"operator {self.operator} needs values", selector=self.key)
        if self.operator in ("Exists", "DoesNotExist") and values:
            raise SelectorError(f"operator {self.operator} takes no values", selector=self.key)
        object.__setattr__(self, "values", values)

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        if self.operator == "In":
            return value is not None and value in self.values
        if self.operator == "NotIn":
            return value is None or value not in self.values
        if self.operator == "Exists":
            return value is not None
        return value is None

    def __str__(self) -> str:
        if self.operator == "Exists":
            return self.key
        if self.operator == "DoesNotExist":
            return f"!{self.key}"
        if len(self.values) == 1:
            op = "=" if self.operator == "In" else "!="
            return f"{self.key}{op}{self.values[0]}"
        word = "in" if self.operator == "In" else "notin"
        return f"{self.key} {word} ({','.join(self.values)})"


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """All requirements must hold (AND). Canonical: sorted, no duplicates; empty matches all."""

    requirements: tuple[Requirement, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "requirements", tuple(sorted(set(self.requirements))))

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """Parse the string form (what `kubectl -l` and `?labelSelector=` take)."""
        return cls(tuple(_Parser(text).requirements()))

    @classmethod
    def from_labels(cls, labels: Mapping[str, str]) -> LabelSelector:
        """Equality on every given label (a `matchLabels` alone)."""
        return cls(tuple(Requirement(k, "In", (v,)) for k, v in labels.items()))

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> LabelSelector:
        """Read a `metav1.LabelSelector` (`matchLabels` + `matchExpressions`)."""
        labels = spec.get("matchLabels") or {}
        expressions = spec.get("matchExpressions") or []
        if not isinstance(labels, Mapping) or not isinstance(expressions, list):
            raise SelectorError("matchLabels must be a map and matchExpressions a list")
        reqs = [Requirement(str(k), "In", (str(v),)) for k, v in labels.items()]
        for expr in expressions:
            if not isinstance(expr, Mapping):
                raise SelectorError("a matchExpressions entry must be a map")
            values = expr.get("values") or []
            if not isinstance(values, list):
                raise SelectorError("matchExpressions values must be a list")
            operator = str(expr.get("operator", ""))
            if operator not in OPERATORS:
                raise SelectorError(f"unknown operator {operator!r}")
            key = str(expr.get("key", ""))
            reqs.append(Requirement(key, cast(Operator, operator), tuple(str(v) for v in values)))
        return cls(tuple(reqs))

    @property
    def is_empty(self) -> bool:
        """True when the selector has no requirement and so matches every object."""
        return not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(req.matches(labels) for req in self.requirements)

    def to_dict(self) -> dict[str, Any]:
        """The `metav1.LabelSelector` form; single-value `In` becomes `matchLabels`."""
        match_labels: dict[str, str] = {}
        expressions: list[dict[str, Any]] = []
        for req in self.requirements:
            if req.operator == "In" and len(req.values) == 1 and req.key not in match_labels:
                match_labels[req.key] = req.values[0]
                continue
            expr: dict[str, Any] = {"key": req.key, "operator": req.operator}
            if req.values:
                expr["values"] = list(req.values)
            expressions.append(expr)
        out: dict[str, Any] = {}
        if match_labels:
            out["matchLabels"] = match_labels
        if expressions:
            out["matchExpressions"] = expressions
        return out

    def __str__(self) -> str:
        """The canonical string form; `LabelSelector.parse(str(s)) == s`."""
        return ",".join(str(req) for req in self.requirements)


class _Parser:
    """A recursive-descent parser over apimachinery's selector grammar (minus `<` and `>`)."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._tokens = list(self._tokenize(text))
        self._pos = 0

    @staticmethod
    def _tokenize(text: str) -> Iterator[str]:
        i = 0
        while i < len(text):
            ch = text[i]
            if ch.isspace():
                i += 1
            elif text.startswith(("==", "!="), i):
                yield text[i : i + 2]
                i += 2
            elif ch in _SPECIAL:
                yield ch
                i += 1
            else:
                start = i
                while i < len(text) and text[i] not in _SPECIAL:
                    i += 1
                yield text[start:i]

    def _peek(self) -> str | None:
        return self._tokens[self._pos] if self._pos < len(self._tokens) else None

    def _next(self) -> str | None:
        token = self._peek()
        self._pos += 1
        return token

    def _fail(self, message: str) -> SelectorError:
        return SelectorError(message, selector=self._text)

    def _identifier(self, what: str) -> str:
        token = self._next()
        if token is None or token in _SPECIAL or token in ("==", "!="):
            raise self._fail(f"expected {what}")
        return token

    def requirements(self) -> Iterator[Requirement]:
        if self._peek() is None:
            return
        while True:
            yield self._requirement()
            token = self._next()
            if token is None:
                return
            if token != ",":
                raise self._fail(f"expected ',' but found {token!r}")

    def _requirement(self) -> Requirement:
        if self._peek() == "!":
            self._next()
            return Requirement(self._identifier("a label key"), "DoesNotExist")
        key = self._identifier("a label key")
        token = self._peek()
        if token is None or token == ",":
            return Requirement(key, "Exists")
        self._next()
        if token in ("=", "=="):
            return Requirement(key, "In", (self._value(),))
        if token == "!=":
            return Requirement(key, "NotIn", (self._value(),))
        if token in ("in", "notin"):
            return Requirement(key, "In" if token == "in" else "NotIn", self._value_set())
        raise self._fail(f"unsupported operator {token!r}")

    def _value(self) -> str:
        """A value after `=`; it may be empty (`a=` selects an empty label value)."""
        token = self._peek()
        if token is None or token in (",", ")"):
            return ""
        return self._identifier("a label value")

    def _value_set(self) -> tuple[str, ...]:
        if self._next() != "(":
            raise self._fail("expected '(' after in/notin")
        values: list[str] = []
        while True:
            values.append(self._value())
            token = self._next()
            if token == ")":
                break
            if token != ",":
                raise self._fail("expected ',' or ')' in a value set")
        if values == [""]:
            raise self._fail("a value set cannot be empty")
        return tuple(values)
