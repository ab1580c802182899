"""kro.cel.opaque: the value types kro's libraries add to CEL, as synthetic protobuf messages.

The Kubernetes libraries return typed values (`quantity("1Gi")` is a Quantity, not a string),
so `quantity("1Gi") + 1` must fail at compile time and `isLessThan` must mean different things
for quantities and semvers. The engine can only carry such values through evaluation as
protobuf messages (an abstract type fails at runtime), so each one is a one-field message
holding a canonical string. The message names are the type names cel-go prints, so error
messages read the same as upstream: `kubernetes.Quantity`, `kubernetes.URL`,
`kubernetes.Semver`, `net.IP`, `net.CIDR`, `kro.run.Condition`.

The engine compares messages field by field, so equality compares the canonical string
(e.g. `ip("::1") == ip("0::1")` is true). Quantities and semvers define equality by value
instead (`1Gi` equals `1073741824`, build metadata is ignored): where the checker sees them
compared, `lowering` calls `equality` instead. The sentinel `omit()` returns is an empty
message, turned into `OMIT` on the way out.
"""

from __future__ import annotations

from typing import Any, Final

from google.protobuf import (
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,
    message_factory,
    struct_pb2,
    timestamp_pb2,
)
from google.protobuf.message import Message

_FD = descriptor_pb2.FieldDescriptorProto

# (proto package, message, fields). Every field is a singular string.
_MESSAGES: Final = (
    ("kubernetes", "Quantity", ("value",)),
    ("kubernetes", "URL", ("value",)),
    ("kubernetes", "Semver", ("value",)),
    ("net", "IP", ("value",)),
    ("net", "CIDR", ("value",)),
    ("kro.run", "Condition", ("type", "status", "reason", "message")),
    ("kro.internal", "Omit", ()),
)
WELL_KNOWN_SERIALIZED: Final = (
    struct_pb2.DESCRIPTOR.serialized_pb,
    timestamp_pb2.DESCRIPTOR.serialized_pb,
    duration_pb2.DESCRIPTOR.serialized_pb,
)


def _library_files() -> tuple[descriptor_pb2.FileDescriptorProto, ...]:
    files: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    for package, name, fields in _MESSAGES:
        proto = files.get(package)
        if proto is None:
            proto = descriptor_pb2.FileDescriptorProto(
                name=f"kro/lib/{package.replace('.', '_')}.proto",
                package=package,
                syntax="proto3",
            )
            files[package] = proto
        message = proto.message_type.add(name=name)
        for number, field_name in enumerate(fields, start=1):
            message.field.add(
                name=field_name,
                number=number,
                type=_FD.TYPE_STRING,
                label=_FD.LABEL_OPTIONAL,
                json_name=field_name,
            )
    return tuple(files.values())


LIBRARY_FILES: Final = _library_files()
LIBRARY_SERIALIZED: Final = tuple(f.SerializeToString() for f in LIBRARY_FILES)


def new_pool(*extra: bytes) -> descriptor_pool.DescriptorPool:
    """A descriptor pool with the well-known types, kro's library types and `extra` files."""
    pool = descriptor_pool.DescriptorPool()
    for serialized in (*WELL_KNOWN_SERIALIZED, *LIBRARY_SERIALIZED, *extra):
        pool.AddSerializedFile(serialized)
    return pool


LIBRARY_POOL: Final = new_pool()


def _message_class(full_name: str) -> type[Message]:
    cls: type[Message] = message_factory.GetMessageClass(
        LIBRARY_POOL.FindMessageTypeByName(full_name)
    )
    return cls


Quantity: Final = _message_class("kubernetes.Quantity")
URL: Final = _message_class("kubernetes.URL")
Semver: Final = _message_class("kubernetes.Semver")
IP: Final = _message_class("net.IP")
CIDR: Final = _message_class("net.CIDR")
Condition: Final = _message_class("kro.run.Condition")
Omit: Final = _message_class("kro.internal.Omit")

MESSAGE_CLASSES: Final[dict[str, type[Message]]] = {
    "kubernetes.Quantity": Quantity,
    "kubernetes.URL": URL,
    "kubernetes.Semver": Semver,
    "net.IP": IP,
    "net.CIDR": CIDR,
    "kro.run.Condition": Condition,
    "kro.internal.Omit": Omit,
}
_TEXT_TYPES: Final = (Quantity, URL, Semver, IP, CIDR)


class _OmitSentinel:
    """The JSON-side marker for `omit()`: the graph deletes the key / drops the element."""

    _instance: _OmitSentinel | None = None

    def __new__(cls) -> _OmitSentinel:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "OMIT"

    def __reduce__(self) -> str:
        return "OMIT"


OMIT: Final = _OmitSentinel()


def make(cls: type[Message], **fields: Any) -> Message:
    """Construct a library message (the classes are dynamic, so mypy sees only Message)."""
    return cls(**fields)


def text_of(value: Message) -> str:
    """The canonical string a one-field library message carries."""
    text: str = getattr(value, "value", "")
    return text


def opaque_text(value: Message) -> str | None:
    """The JSON form of a library value, or None if `value` is not one."""
    if isinstance(value, _TEXT_TYPES):
        return text_of(value)
    return None
