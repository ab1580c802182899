"""kro.applyset.contest: notice fields another controller keeps rewriting, and stop fighting.

kro force-applies every child, so it takes back any field of its template someone else changed
(drift correction, R-20): right for a human's one-off `kubectl edit`, wrong for a field another
controller maintains (kube-controller-manager's `deployment.kubernetes.io/revision` annotation
on Deployments, an autoscaler's `spec.replicas`): both sides would rewrite it forever. Upstream
kro has no guard against this. The rule, per child object and field path:

1. A field of kro's apply body that another manager owns (managedFields) with a *different*
   value was taken over since kro's last apply (another manager's Update removes the field from
   kro's set). Each takeover seen at a new resourceVersion is one round.
2. Round 1 is re-applied at once (drift correction, as upstream). Later rounds only after a
   backoff doubling each round (`backoff_s`: 2 s, 4 s, ...); until then the field is left out
   of kro's body and the caller is asked to retry at the end of it.
3. After `limit` rounds (3) within `window_s` (10 minutes) kro yields: the field is left out of
   every later apply. That only drops kro's ownership: the other manager's value stays.
4. A change of kro's desired value for the field (a new template or spec) starts the count
   again: the user asked for something new.

Yielded fields are reported (`Contest`) for the instance's condition, Event and metric. The
state lives in memory: after a restart kro re-applies a contested field for up to `limit`
rounds again before it yields.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

__all__ = [
    "Contest",
    "ContestPolicy",
    "FieldContests",
    "Review",
    "contested_paths",
    "display_path",
    "holds",
    "value_at",
    "without_paths",
]

PathKey = tuple[str, ...]
"""A field path as managedFields spell it: `("f:metadata", "f:annotations", "f:x")`."""

MISSING: Final = object()
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True, slots=True)
class ContestPolicy:
    """How many rounds kro fights for a field, and how fast."""

    limit: int = 3
    window_s: float = 600.0
    backoff_s: float = 2.0
    forget_after_s: float = 3600.0


@dataclass(frozen=True, slots=True)
class Contest:
    """One field of one child that another manager changed while kro applies it."""

    resource_id: str
    path: str  # for people: metadata.annotations["deployment.kubernetes.io/revision"]
    manager: str
    rounds: int
    yielded: bool
    fresh: bool = False  # this review counted a new round (for counters and Events)


@dataclass(frozen=True, slots=True)
class Review:
    """What to do with one apply body: paths to leave out now, and what to report."""

    omit: tuple[PathKey, ...] = ()
    contests: tuple[Contest, ...] = ()
    retry_after_s: float | None = None


@dataclass(slots=True)
class _Field:
    manager: str
    desired: bytes
    rounds: int = 0
    first_round: float = 0.0
    last_round: float = 0.0
    last_version: str = ""
    yielded: bool = False
    reapplied: bool = True
    """kro's last apply held the field: another manager holding it since is a new round. One
    left out (backing off) is not taken back, so a later write by that manager (a status
    update of a Deployment, say) is no round of the fight."""


@dataclass(slots=True)
class _Object:
    fields: dict[PathKey, _Field] = field(default_factory=dict)
    touched: float = 0.0


class FieldContests:
    """Per child UID and field path: rounds of takeover, backoff and yield (module docstring)."""

    def __init__(
        self,
        own_manager: str,
        policy: ContestPolicy | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._own = own_manager
        self._policy = policy or ContestPolicy()
        self._clock = clock
        self._objects: dict[str, _Object] = {}

    def review(
        self, resource_id: str, body: Mapping[str, Any], live: Mapping[str, Any] | None
    ) -> Review:
        """Compare kro's apply `body` with the `live` object; say which paths to leave out."""
        meta = (live or {}).get("metadata") or {}
        uid = str(meta.get("uid") or "")
        if not uid:
            return Review()
        now = self._clock()
        self._expire(now)
        takeovers = contested_paths(live or {}, body, self._own)
        if uid not in self._objects and not takeovers:
            return Review()
        state = self._objects.setdefault(uid, _Object())
        state.touched = now
        version = str(meta.get("resourceVersion") or "")
        omit: list[PathKey] = []
        contests: list[Contest] = []
        retry: list[float] = []
        fresh: set[PathKey] = set()
        for path, known in list(state.fields.items()):
            desired = value_at(body, path)
            if desired is MISSING or _encode(desired) != known.desired:
                del state.fields[path]  # kro wants something else now: a fresh start
        for path, manager in takeovers.items():
            tracked = state.fields.setdefault(
                path, _Field(manager=manager, desired=_encode(value_at(body, path)))
            )
            if tracked.yielded or tracked.last_version == version or not tracked.reapplied:
                continue  # counted already, given up on, or not taken back since: no round
            if tracked.rounds and now - tracked.first_round > self._policy.window_s:
                tracked.rounds = 0  # the last rounds were long ago: not a fight
            tracked.rounds += 1
            fresh.add(path)
            tracked.manager = manager
            tracked.last_version = version
            tracked.last_round = now
            if tracked.rounds == 1:
                tracked.first_round = now
            tracked.yielded = tracked.rounds >= self._policy.limit
        for path, tracked in state.fields.items():
            if tracked.yielded:
                omit.append(path)
            elif tracked.rounds > 1:
                due = tracked.last_round + self._policy.backoff_s * 2 ** (tracked.rounds - 2)
                if path in takeovers and now < due:
                    omit.append(path)
                    retry.append(due - now)
            tracked.reapplied = path not in omit
            if tracked.rounds:
                contests.append(
                    Contest(
                        resource_id=resource_id,
                        path=display_path(path),
                        manager=tracked.manager,
                        rounds=tracked.rounds,
                        yielded=tracked.yielded,
                        fresh=path in fresh,
                    )
                )
        if not state.fields:
            del self._objects[uid]
        return Review(tuple(omit), tuple(contests), min(retry) if retry else None)

    def tracks(self, uid: str) -> bool:
        """Whether some field of object `uid` is in a contest kro remembers."""
        return uid in self._objects

    def _expire(self, now: float) -> None:
        horizon = now - self._policy.forget_after_s
        for uid in [u for u, s in self._objects.items() if s.touched < horizon]:
            del self._objects[uid]


def contested_paths(
    live: Mapping[str, Any], body: Mapping[str, Any], own_manager: str
) -> dict[PathKey, str]:
    """Paths of `body` owned in `live` by another manager with a different value -> manager.

    Walks each foreign managedFields entry (fieldsV1) alongside kro's body and the live object;
    only fields kro sets are considered, and only leaves (a scalar in kro's body, or a field a
    manager owns as a whole): an object that merely contains another manager's field is not
    contested.
    """
    out: dict[PathKey, str] = {}
    for entry in (live.get("metadata") or {}).get("managedFields") or []:
        fields = entry.get("fieldsV1") if isinstance(entry, Mapping) else None
        if isinstance(fields, Mapping) and entry.get("manager") != own_manager:
            for path in _walk(fields, body, live, ()):
                out.setdefault(path, str(entry.get("manager") or ""))
    return out


def _walk(fields: Mapping[str, Any], desired: Any, live: Any, path: PathKey) -> Iterator[PathKey]:
    for key, sub in fields.items():
        # `v:` (a member of a set: no value to disagree on) and `i:` are not followed
        if not key.startswith(("f:", "k:")) or not isinstance(sub, Mapping):
            continue
        want, have = _child(desired, key), _child(live, key)
        if want is MISSING:
            continue
        children = {k: v for k, v in sub.items() if k != "."}
        if not children or not isinstance(want, (Mapping, list)):
            if not holds(have, want, strict=False):
                yield (*path, key)
            continue
        yield from _walk(children, want, have, (*path, key))


def holds(live: Any, wanted: Any, *, strict: bool = True) -> bool:
    """Whether `live` holds every value of `wanted` (maps: a subset, so extra keys from defaults
    are fine; lists: item by item). Scalars: of the same type and equal; not `strict`, numbers
    compare as numbers (1 and 1.0)."""
    if isinstance(wanted, Mapping):
        return isinstance(live, Mapping) and all(
            key in live and holds(live[key], value, strict=strict) for key, value in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(live, list)
            and len(live) == len(wanted)
            and all(holds(a, b, strict=strict) for a, b in zip(live, wanted, strict=True))
        )
    if strict or isinstance(wanted, bool) or isinstance(live, bool):
        return type(live) is type(wanted) and bool(live == wanted)
    if isinstance(wanted, (int, float)) and isinstance(live, (int, float)):
        return float(live) == float(wanted)
    return bool(live == wanted)


def value_at(body: Any, path: Sequence[str]) -> Any:
    """The value at a managedFields path (`f:` keys, `k:` list items), or MISSING."""
    for key in path:  # the common `f:` step inline: the no-op proof walks every owned path
        is_field = key[:2] == "f:" and isinstance(body, Mapping)
        body = body.get(key[2:], MISSING) if is_field else _child(body, key)
    return body


def _child(current: Any, key: str) -> Any:
    if key.startswith("f:") and isinstance(current, Mapping):
        return current.get(key[2:], MISSING)
    if not key.startswith("k:") or not isinstance(current, list):
        return MISSING
    try:
        selector = json.loads(key[2:])
    except ValueError:
        return MISSING
    if not isinstance(selector, Mapping):
        return MISSING
    items = (i for i in current if isinstance(i, Mapping))
    return next((i for i in items if all(i.get(k) == v for k, v in selector.items())), MISSING)


def _encode(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def display_path(path: Sequence[str]) -> str:
    """`metadata.annotations["a/b"]`, `spec.template.spec.containers[name="web"].image`."""
    out = ""
    for key in path:
        if key.startswith("f:"):
            name = key[2:]
            out += f".{name}" if _IDENTIFIER.match(name) else f"[{json.dumps(name)}]"
        else:
            try:
                selector = json.loads(key[2:])
            except ValueError:
                selector = {}
            parts = ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(selector.items()))
            out += f"[{parts}]"
    return out.lstrip(".")


def without_paths(body: Mapping[str, Any], paths: Sequence[PathKey]) -> dict[str, Any]:
    """A deep copy of `body` without the given leaves (empty parents are kept: harmless)."""
    out: dict[str, Any] = orjson.loads(orjson.dumps(body))
    for path in paths:
        parent, last = value_at(out, path[:-1]), path[-1]
        if last.startswith("f:") and isinstance(parent, dict):
            parent.pop(last[2:], None)
        elif (target := _child(parent, last)) is not MISSING:
            parent.remove(target)
    return out
