"""kro.cli.instance_check: an instance checked against its RGD's CRD before `kro render`.

In a cluster, the API server refuses an instance that does not fit the CRD kro generated, and
kro never sees it. Rendering such an instance offline would show resources that can never
exist (or a CEL error where a schema error belongs), so `kro render` asks what the API server
would answer first, in its words, every problem at once:

* the object's apiVersion and kind must be the RGD's instance API (the RGD itself, or an
  object of another kind, is refused with what was expected and what was given);
* `metadata.name` is required and must be a DNS subdomain; `metadata` may hold only
  ObjectMeta fields;
* defaults are applied (`kro.graph.defaults`), then `spec` is validated against the CRD's
  schema (`kro.graph.schema_validation`: types, enums, bounds, patterns, required, unknown
  fields) and its CEL rules (`kro.graph.schema_rules`);
* `status` is ignored, as the API server ignores it on create (status subresource).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kro.api.names import RGD_KIND
from kro.graph.defaults import apply_defaults
from kro.graph.model import Graph
from kro.graph.schema_rules import validate_with_rules
from kro.graph.schema_validation import ErrorType, FieldError, validate_value

DNS1123_SUBDOMAIN: Final = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
DNS1123_MESSAGE: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character"
)
TOP_LEVEL_FIELDS: Final = ("apiVersion", "kind", "metadata", "spec", "status")


class WrongKindError(Exception):
    """The object given is not an instance of the RGD's kind; the message says both."""


@dataclass(frozen=True, slots=True)
class CheckedInstance:
    """The instance with defaults applied, or the reasons the API server would refuse it."""

    instance: dict[str, Any]
    errors: tuple[str, ...]


def expected_kind(graph: Graph) -> str:
    return f"kind {graph.instance.kind} (apiVersion {graph.instance.api_version})"


def check_kind(graph: Graph, obj: Mapping[str, Any]) -> None:
    """Raise WrongKindError unless `obj` is an instance of the RGD's kind."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if (api_version, kind) == (graph.instance.api_version, graph.instance.kind):
        return
    got = f"kind {kind} (apiVersion {api_version})"
    hint = ""
    if kind == RGD_KIND:
        hint = " (the ResourceGraphDefinition itself; -i takes an instance of the kind it defines)"
    raise WrongKindError(f"expected an instance of {expected_kind(graph)}, got {got}{hint}")


def check_instance(
    graph: Graph, obj: Mapping[str, Any], object_meta: Mapping[str, Any] | None = None
) -> CheckedInstance:
    """Default and validate `obj` (already known to be of the right kind)."""
    instance = {k: v for k, v in obj.items() if k != "status"}
    instance["spec"] = apply_defaults(graph.instance.spec_schema, instance.get("spec") or {})
    errors: list[FieldError] = [
        FieldError(name, ErrorType.UNKNOWN_FIELD)
        for name in instance
        if name not in TOP_LEVEL_FIELDS
    ]
    errors += metadata_errors(instance.get("metadata"), object_meta)
    errors += validate_with_rules(graph.instance.spec_schema, instance["spec"], "spec")
    return CheckedInstance(instance, tuple(str(e) for e in errors))


def metadata_errors(metadata: Any, object_meta: Mapping[str, Any] | None) -> list[FieldError]:
    """What the API server says of an object's metadata (a Graph's too: graph_documents)."""
    if metadata is not None and not isinstance(metadata, Mapping):
        return [FieldError("metadata", ErrorType.INVALID, metadata, "must be an object")]
    metadata = metadata or {}
    errors: list[FieldError] = []
    name = metadata.get("name")
    if not name and not metadata.get("generateName"):
        errors.append(
            FieldError(
                "metadata.name", ErrorType.REQUIRED, detail="name or generateName is required"
            )
        )
    elif isinstance(name, str) and (len(name) > 253 or not DNS1123_SUBDOMAIN.match(name)):
        errors.append(FieldError("metadata.name", ErrorType.INVALID, name, DNS1123_MESSAGE))
    if object_meta is not None:
        errors += validate_value(object_meta, metadata, "metadata")
    return errors
