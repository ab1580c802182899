"""kro.cel.declarations: one variable's declaration (its CEL type, the synthetic protobuf file
the checker reads its fields from, and its input converter), translated once and shared.

Translating an OpenAPI schema (descriptors, input converter, a probe of the engine) is the
expensive part of declaring a variable, and a graph declares the same few kinds over and over,
so declarations are cached process-wide and handed out as the *same object* every time. The
engine keys its check environments by the identity of these objects (`engine`), so two
environments declaring the same variables share one checker and one compile cache.

Three caches, chosen by how stable the schema object is:

- a kind's schema (one `x-kubernetes-group-version-kind`): by object identity, whatever the
  variable name, with kind-named messages (`kro.t3.deployment_spec`); a resolver hands out the
  same object for a kind every time. A bare list of such a kind (forEach collections, selector
  externalRefs) is keyed by the identity of its items and the variable name;
- any other schema (the instance `schema`, rebuilt by every graph build): by variable name
  and content (its JSON text); the translation reads a private copy, so mutating the
  caller's dict afterwards cannot affect it;
- a `CelType` or `None` (`dyn`): by type.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from cel_expr_python import cel

from kro.cel.convert import InputConverter
from kro.cel.errors import CelDeclarationError
from kro.cel.opaque import new_pool
from kro.cel.types import DYN, CelType, SchemaTranslator, engine_type

_IDENTIFIER: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True, slots=True, eq=False)
class Declaration:
    """A declared variable's type, as the checker and the binder need it.

    Compared by identity: equal objects mean "the same translation", which is what lets
    check environments be shared.
    """

    cel_type: CelType
    engine_type: Any
    proto_file: bytes
    messages: Mapping[str, Mapping[str, Any]]
    converter: InputConverter
    hint: str = ""


class _LRU:
    """A small thread-safe LRU of declarations; values keep their key's anchor alive."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._items: OrderedDict[Hashable, tuple[object, Declaration]] = OrderedDict()

    def get(self, key: Hashable, anchor: object = None) -> Declaration | None:
        with self._lock:
            found = self._items.get(key)
            if found is None or found[0] is not anchor:
                return None
            self._items.move_to_end(key)
            return found[1]

    def put(self, key: Hashable, anchor: object, declaration: Declaration) -> None:
        with self._lock:
            self._items[key] = (anchor, declaration)
            if len(self._items) > self._size:
                self._items.popitem(last=False)


# Kinds are few and long-lived; lists and instance schemas are per graph (and only reused
# when the same graph is built again), so their caches are smaller.
_by_kind: Final = _LRU(512)
_by_list: Final = _LRU(128)
_by_content: Final = _LRU(64)
_by_type: Final = _LRU(512)


def declaration_of(name: str, schema: Mapping[str, Any] | CelType | None) -> Declaration:
    """The (shared) declaration of variable `name` from an OpenAPI schema, a CelType or None."""
    if not _IDENTIFIER.match(name):
        raise CelDeclarationError(name=name, message="not a CEL identifier")
    if schema is None or isinstance(schema, CelType):
        return _typed(schema or DYN)
    if isinstance(schema, Mapping):
        return _translate(name, schema)
    raise CelDeclarationError(name=name, message=f"unsupported schema {type(schema)}")


def _typed(cel_type: CelType) -> Declaration:
    # CelType equality ignores `schema`; object types are named per translation, so equal
    # names mean the same translation and the same schema.
    found = _by_type.get(cel_type)
    if found is None:
        # An object type translated from a schema keeps it: values bound to it (a forEach
        # row) are converted as that schema says (timestamps, durations, bytes; C-34).
        converter = InputConverter(cel_type.schema)
        found = Declaration(cel_type, engine_type(cel_type), b"", {}, converter)
        _by_type.put(cel_type, None, found)
    return found


def _kind_hint(schema: Any) -> str:
    """The lowercased kind when the schema says which kind it is, else ""."""
    if not isinstance(schema, Mapping):
        return ""
    gvks = schema.get("x-kubernetes-group-version-kind")
    if isinstance(gvks, list) and len(gvks) == 1 and isinstance(gvks[0], Mapping):
        kind = str(gvks[0].get("kind") or "")
        if _IDENTIFIER.match(kind):
            return kind.lower()
    return ""


def _translate(name: str, schema: Mapping[str, Any]) -> Declaration:
    """Translate a schema once (see the module docstring for the three keys)."""
    kind = _kind_hint(schema)
    if kind:
        return _cached(_by_kind, (kind, id(schema)), schema, kind, schema)
    items = schema.get("items")
    if schema.keys() == {"type", "items"} and schema["type"] == "array" and _kind_hint(items):
        # Only `type` and `items` are read, so the wrapper's identity does not matter.
        return _cached(_by_list, (name, id(items)), items, name, schema)
    try:
        text = json.dumps(schema)
    except (TypeError, ValueError):  # not JSON (a date default, a cycle): translate as is
        return _translate_uncached(name, schema)
    found = _by_content.get((name, text))
    if found is None:
        found = _translate_uncached(name, json.loads(text))
        _by_content.put((name, text), None, found)
    return found


def _cached(
    cache: _LRU, key: Hashable, anchor: object, hint: str, schema: Mapping[str, Any]
) -> Declaration:
    found = cache.get(key, anchor)
    if found is None:
        found = _translate_uncached(hint, schema)
        cache.put(key, anchor, found)
    return found


def _translate_uncached(name: str, schema: Mapping[str, Any]) -> Declaration:
    translator = SchemaTranslator(name)
    engine, cel_type = translator.translate(schema)
    proto_file = b""
    if translator.file.message_type:
        proto_file = translator.file.SerializeToString()
        _probe_descriptors(name, translator, proto_file)
    return Declaration(
        cel_type, engine, proto_file, translator.messages, InputConverter(schema), name
    )


def _probe_descriptors(name: str, translator: SchemaTranslator, proto_file: bytes) -> None:
    """Fail now if the engine's C++ protobuf rejects the synthetic file.

    A rejected file is only logged by the engine and its types silently become opaque, which
    would turn every later field selection into a confusing compile error.
    """
    first = translator.file.message_type[0]
    if not first.field:
        return
    try:
        pool = new_pool(proto_file)
        probe = cel.NewEnv(
            pool, variables={"probe": cel.Type(f"{translator.package}.{first.name}")}
        )
        probe.compile(f"probe.{first.field[0].name}")
    except (RuntimeError, TypeError, ValueError) as err:
        raise CelDeclarationError(name=name, message=f"schema not representable: {err}") from None
