"""kro.cel.lib_conditions: `runtime.newCondition({...})` and `runtime.condition(obj, type)`
for author-defined status conditions (C-32, C-33, §1.K).

Upstream `runtime.newCondition` is a parse-time macro whose argument is a map literal with
*bare identifier* keys (`{type: "Ready", status: "True"}`). In CEL such keys are variable
references, so the literal cannot be checked as written; the macro turns it into a typed
Condition. The engine has no macro hook, so `rewrite_new_conditions` does the same at the
source level: it reads the parsed tree, enforces upstream's key rules with its messages,
and rewrites the literal into a `kro.run.Condition{...}` message literal, which the checker
then types (values must be strings, `.type`/`.status` typos fail).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from google.protobuf.message import Message

from kro.cel.checked_ast import Call, Const, Ident, Node, StructLit, Tree, walk
from kro.cel.errors import CelCompileError
from kro.cel.library import Overload
from kro.cel.opaque import Condition, make

CONDITION_TYPE: Final = "kro.run.Condition"
KEYS: Final = ("type", "status", "reason", "message")
STATUSES: Final = ("True", "False", "Unknown")
_PREFIX: Final = "runtime.newCondition: "


@dataclass(frozen=True, slots=True)
class NewCondition:
    """A `runtime.newCondition` call; literal fields are known at build time (K-03)."""

    type: str | None
    status: str | None


@dataclass(frozen=True, slots=True)
class ConditionRead:
    """A `runtime.condition(obj, "Type")` call; `root` is obj's variable, if it is one."""

    root: str | None
    type: str | None


def _is_new_condition(node: Node, checked: bool) -> bool:
    kind = node.kind
    if not isinstance(kind, Call):
        return False
    if checked:
        return kind.function == "runtime.newCondition"
    target = kind.target
    return (
        kind.function == "newCondition"
        and target is not None
        and isinstance(target.kind, Ident)
        and target.kind.name == "runtime"
    )


def rewrite_new_conditions(source: str, tree: Tree) -> tuple[str, tuple[NewCondition, ...]]:
    """Validate every newCondition literal in a *parsed* tree and make it a message literal."""
    inserts: list[int] = []
    found: list[NewCondition] = []
    for node in walk(tree.root):
        if not _is_new_condition(node, checked=False):
            continue
        assert isinstance(node.kind, Call)
        found.append(_validate(source, node.kind))
        literal = node.kind.args[0]
        inserts.append(tree.positions[literal.id])
    rewritten = source
    for offset in sorted(inserts, reverse=True):
        rewritten = rewritten[:offset] + CONDITION_TYPE + rewritten[offset:]
    return rewritten, tuple(found)


def _fail(source: str, message: str) -> CelCompileError:
    return CelCompileError(expression=source, message=_PREFIX + message)


def _validate(source: str, call: Call) -> NewCondition:
    if len(call.args) != 1 or not isinstance(call.args[0].kind, StructLit):
        raise _fail(source, "argument must be a map literal {type: ..., status: ...}")
    literal = call.args[0].kind
    values: dict[str, Node] = {}
    for entry in literal.entries:
        key = entry.key
        if key is None or not isinstance(key.kind, Ident):
            raise _fail(
                source,
                "keys must be bare identifiers (type, status, reason, message), "
                "not strings or expressions",
            )
        name = key.kind.name
        if name not in KEYS:
            raise _fail(source, f'unknown key "{name}"')
        if name in values:
            raise _fail(source, f'duplicate key "{name}"')
        values[name] = entry.value
    for required in ("type", "status"):
        if required not in values:
            raise _fail(source, f"'{required}' is required")
    type_literal = _literal(values["type"])
    status_literal = _literal(values["status"])
    if type_literal == "":
        raise _fail(source, "'type' must not be empty")
    if status_literal is not None and status_literal not in STATUSES:
        raise _fail(source, f"'status' must be one of True, False, Unknown, got {status_literal!r}")
    return NewCondition(type=type_literal, status=status_literal)


def _literal(node: Node) -> str | None:
    kind = node.kind
    return kind.value if isinstance(kind, Const) and isinstance(kind.value, str) else None


def condition_reads(tree: Tree) -> tuple[ConditionRead, ...]:
    out: list[ConditionRead] = []
    for node in walk(tree.root):
        kind = node.kind
        if isinstance(kind, Call) and kind.function == "runtime.condition" and len(kind.args) == 2:
            obj, kind_arg = kind.args
            root = obj.kind.name if isinstance(obj.kind, Ident) else None
            out.append(ConditionRead(root=root, type=_literal(kind_arg)))
    return tuple(out)


# ------------------------------------------------------------------------------ runtime


def new_condition(condition: Message) -> Message:
    status: str = getattr(condition, "status", "")
    if status not in STATUSES:
        raise ValueError(_PREFIX + f"'status' must be one of True, False, Unknown, got {status!r}")
    if not getattr(condition, "type", ""):
        raise ValueError(_PREFIX + "'type' must not be empty")
    return condition


def condition(obj: Any, condition_type: str) -> Message:
    """The condition of that type in obj.status.conditions, or an all-empty Condition."""
    status = obj.get("status") if isinstance(obj, Mapping) else None
    entries = status.get("conditions") if isinstance(status, Mapping) else None
    if isinstance(entries, list):
        for entry in entries:
            if isinstance(entry, Mapping) and entry.get("type") == condition_type:
                return make(Condition, **{k: _text(entry.get(k)) for k in KEYS})
    return make(Condition)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


OVERLOADS: Final = (
    Overload(
        "runtime.newCondition", "runtime_newCondition_condition", (CONDITION_TYPE,),
        CONDITION_TYPE, new_condition,
    ),
    Overload(
        "runtime.condition", "runtime_condition_dyn_string", ("dyn", "string"), CONDITION_TYPE,
        condition,
    ),
)  # fmt: skip
