"""kro.graph.validation: the rules an RGD must satisfy before any schema or CEL is looked at.

Upstream runs these first (`validateResourceGraphDefinitionNamingConventions` and the
per-resource structure checks in `pkg/graph/validation.go`) because every later stage relies
on them: resource ids and iterator names become CEL variables, so `my-db` (a subtraction) or
`self` (a keyword) can never work, and a template without `kind` cannot be resolved.

* G-01 kind is UpperCamelCase; G-02 resource ids are lowerCamelCase, unique, not reserved
  (nor `graphengine`, V-07);
  G-03 forEach iterators follow the id rules, do not shadow ids, stay within the dimension cap.
* A-14/A-17 exactly one of template/externalRef; externalRef names or selects, never both,
  and never with forEach; V-12 a selector is a label selector or one `${...}` expression
  (admission checks neither since v0.10).
* G-05/G-06 a template has string apiVersion/kind and a map metadata; apiVersion parses as
  group/version; the lowercased kind is a DNS-1035 label.
* G-08 namespace vs. scope; G-09 no kro-reserved labels/annotations on templates.
* `optional` (DeferredSchemaResolution, kro.graph.deferred): a boolean, only with the gate.
* V-30..V-32 `deletionPolicy`: only with the `DeletionPolicy` gate, only on templates, and
  `Orphaned` only where its annotation can go (`metadata.annotations` a map, absent, or one
  `${...}` expression whose result gets it at render).

Neighbours: `builder` calls `validate_spec` first and the object checks per resource;
`build_errors` holds the error classes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from kro.api.names import (
    DELETION_POLICIES,
    DELETION_POLICY_DELETE,
    DELETION_POLICY_ORPHANED,
    FEATURE_DEFERRED_SCHEMA_RESOLUTION,
    FEATURE_DELETION_POLICY,
    MSG_DELETION_POLICY_TEMPLATE_ONLY,
    RESERVED_LABEL_PREFIXES,
)
from kro.graph.build_errors import ResourceBuildError, RGDValidationError
from kro.graph.errors import TemplateError
from kro.graph.selectors import json_kind, selector_problem
from kro.graph.targets import TARGET_FIELD, TargetProblem, parse_target
from kro.graph.template import is_standalone, parse_template

KIND_NAME: Final = re.compile(r"^[A-Z][a-zA-Z0-9]*$")
RESOURCE_ID: Final = re.compile(r"^[a-z][a-zA-Z0-9]*$")
DNS1035_LABEL: Final = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1035_MAX_LENGTH: Final = 63
NAMING: Final = "naming convention violation"

CEL_RESERVED: Final = frozenset({
    "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
    "function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void",
    "while",
})  # fmt: skip
KRO_RESERVED: Final = frozenset({
    "apiVersion", "context", "dependency", "dependencies", "each", "externalRef",
    "externalReference", "externalRefs", "externalReferences", "graph", "instance", "item",
    "items", "kind", "kro", "metadata", "namespace", "object", "resource",
    "resourcegraphdefinition", "resourceGraphDefinition", "resources", "root", "runtime",
    "schema", "self", "serviceAccountName", "spec", "status", "this", "variables", "vars",
    "version",
})  # fmt: skip
RESERVED_WORDS: Final = CEL_RESERVED | KRO_RESERVED
"""Case-sensitive words no resource id or iterator may use (G-02)."""
RESERVED_RESOURCE_IDS: Final = RESERVED_WORDS | frozenset({"graphengine"})
"""Upstream v0.10 reserves `graphengine` as a resource id only (V-07): its composition engine
names its own node that way, so an RGD resource of that id would collide with it."""


@dataclass(frozen=True, slots=True)
class ResourceInput:
    """One `spec.resources[]` entry after the shape checks, still uncompiled."""

    id: str
    index: int
    template: Mapping[str, Any] | None
    external_ref: Mapping[str, Any] | None
    ready_when: tuple[Any, ...]
    include_when: tuple[Any, ...]
    for_each: tuple[tuple[str, Any], ...]
    deletion_policy: str | None = None
    """`Delete` or `Orphaned` with the DeletionPolicy gate on (for every template resource:
    omitted means `Delete`), None with the gate off and for externalRefs (V-30)."""
    optional: bool = False
    """`optional: true` (DeferredSchemaResolution): the resource may wait for a kind the API
    server does not serve yet without an includeWhen (kro.graph.deferred)."""
    target: str | None = None
    """The cluster the resource is sent to (its own `target`, else the RGD-wide one): a literal
    or a `${}` text (MultiCluster, kro.graph.targets); None: the owner's own cluster."""


def _fail(detail: str, rule: str, rgd: str, resource_id: str | None = None) -> RGDValidationError:
    return RGDValidationError(detail, rule=rule, rgd=rgd, resource_id=resource_id)


def validate_kind(kind: Any, rgd: str) -> str:
    """G-01: the instance kind must be UpperCamelCase (it becomes a CRD kind and a CEL type)."""
    if not isinstance(kind, str) or not KIND_NAME.match(kind):
        raise _fail(
            f"{NAMING}: kind '{kind if kind is not None else ''}' is not a valid KRO kind "
            "name: must be UpperCamelCase",
            "G-01",
            rgd,
        )
    return kind


def _as_list(value: Any, where: str, rgd: str, resource_id: str, rule: str) -> tuple[Any, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _fail(f'resource "{resource_id}": {where} must be a list', rule, rgd, resource_id)
    return tuple(value)


def _check_id(resource_id: Any, seen: set[str], rgd: str) -> str:
    if not isinstance(resource_id, str):
        raise _fail(f"{NAMING}: id {resource_id} is not a valid KRO resource id", "G-02", rgd)
    if resource_id in RESERVED_RESOURCE_IDS:
        rule = "G-02" if resource_id in RESERVED_WORDS else "V-07"
        raise _fail(
            f"{NAMING}: id {resource_id} is a reserved keyword in KRO", rule, rgd, resource_id
        )
    if not RESOURCE_ID.match(resource_id):
        raise _fail(
            f"{NAMING}: id {resource_id} is not a valid KRO resource id: must be lower camelCase",
            "G-02",
            rgd,
            resource_id,
        )
    if resource_id in seen:
        raise _fail(f"{NAMING}: found duplicate resource IDs {resource_id}", "G-02", rgd)
    seen.add(resource_id)
    return resource_id


def _for_each(
    raw: Any, resource_id: str, ids: frozenset[str], max_dimensions: int, rgd: str
) -> tuple[tuple[str, Any], ...]:
    """G-03: iterator names are CEL variables of the resource's template, so id rules apply."""
    entries = _as_list(raw, "forEach", rgd, resource_id, "G-03")
    if len(entries) > max_dimensions:
        raise _fail(
            f'resource "{resource_id}": forEach cannot have more than {max_dimensions} '
            f"dimensions, got {len(entries)}",
            "G-03",
            rgd,
            resource_id,
        )
    out: list[tuple[str, Any]] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping) or len(entry) != 1:
            raise _fail(
                f'resource "{resource_id}": forEach[{i}] must have exactly one iterator',
                "G-03",
                rgd,
                resource_id,
            )
        ((name, expression),) = entry.items()
        where = f'{NAMING}: resource "{resource_id}": forEach iterator "{name}"'
        if name in RESERVED_WORDS:
            raise _fail(f"{where} is a reserved keyword in KRO", "G-03", rgd, resource_id)
        if not isinstance(name, str) or not RESOURCE_ID.match(name):
            raise _fail(
                f"{where} is not a valid KRO iterator name: must be lower camelCase",
                "G-03",
                rgd,
                resource_id,
            )
        if name in ids:
            raise _fail(f"{where} conflicts with a resource id", "G-03", rgd, resource_id)
        if any(name == seen for seen, _ in out):
            raise _fail(f"{where} is declared more than once", "G-03", rgd, resource_id)
        out.append((name, expression))
    return tuple(out)


def _external_ref(raw: Any, resource_id: str, rgd: str) -> Mapping[str, Any]:
    """A-17: by name (one object) or by selector (a list), never both; admission repeats it."""
    metadata = raw.get("metadata") if isinstance(raw, Mapping) else None
    if not isinstance(metadata, Mapping):
        raise _fail(
            f'resource "{resource_id}": externalRef.metadata must be a map',
            "A-17",
            rgd,
            resource_id,
        )
    has_name = metadata.get("name") not in (None, "")
    if has_name == (metadata.get("selector") is not None):
        raise _fail(
            f'resource "{resource_id}": exactly one of name or selector must be provided',
            "A-17",
            rgd,
            resource_id,
        )
    check_selector(metadata.get("selector"), resource_id, rgd)
    assert isinstance(raw, Mapping)
    return raw


def check_selector(selector: Any, resource_id: str, rgd: str) -> None:
    """V-12: a selector is a literal label selector or one `${...}` expression.

    What a literal says is judged here (strings still holding `${...}` excepted); what an
    expression yields is judged when it is evaluated (kro.graph.evaluate). A string with
    an unclosed `${` is left to the template parser, which names it (V-06).
    """
    if selector is None:
        return
    where = f'resource "{resource_id}": externalRef.metadata.selector'
    if isinstance(selector, str):
        if is_standalone(selector) or _malformed(selector):
            return
        raise _fail(
            f"{where} must be a label selector or one ${{...}} expression that yields one, "
            f"got {json_kind(selector)} {selector!r}",
            "V-12",
            rgd,
            resource_id,
        )
    problem = selector_problem(selector, templated=True)
    if problem is not None:
        raise _fail(f"{where}: {problem}", "V-12", rgd, resource_id)


def _malformed(text: str) -> bool:
    """True if the template parser refuses `text` (and says why, naming it: V-06)."""
    try:
        parse_template(text)
    except TemplateError:
        return True
    return False


def _deletion_policy(
    raw: Mapping[str, Any], resource_id: str, *, template: bool, gate: bool, rgd: str
) -> str | None:
    """V-30/V-31: the resource's policy, or None when the gate is off (nothing is enforced,
    so an RGD that does not use the field renders exactly as before)."""
    declared = raw.get("deletionPolicy")
    if declared is not None and not template:
        detail = f'resource "{resource_id}": {MSG_DELETION_POLICY_TEMPLATE_ONLY}'
        raise _fail(detail, "V-31", rgd, resource_id)
    if declared is not None and not gate:
        raise _fail(
            f'resource "{resource_id}": deletionPolicy requires the {FEATURE_DELETION_POLICY} '
            f"feature gate (--feature-gates={FEATURE_DELETION_POLICY}=true)",
            "V-30",
            rgd,
            resource_id,
        )
    if declared is not None and declared not in DELETION_POLICIES:
        raise _fail(
            f'resource "{resource_id}": unsupported deletionPolicy "{declared}": must be one of '
            + ", ".join(DELETION_POLICIES),
            "V-30",
            rgd,
            resource_id,
        )
    if not gate or not template:
        return None
    return str(declared or DELETION_POLICY_DELETE)


OPTIONAL_FIELD: Final = "optional"


def optional_problem(value: Any, *, gate: bool) -> str | None:
    """What is wrong with a resource's (or Graph node's) `optional` field, None when nothing
    is (kro.graph.deferred). With the DeferredSchemaResolution gate off `optional: true` is
    refused: it would promise a wait the build cannot give."""
    if value is None:
        return None
    if not isinstance(value, bool):
        return f"{OPTIONAL_FIELD} must be a boolean"
    if value and not gate:
        return (
            f"{OPTIONAL_FIELD} requires the {FEATURE_DEFERRED_SCHEMA_RESOLUTION} feature gate "
            f"(--feature-gates={FEATURE_DEFERRED_SCHEMA_RESOLUTION}=true)"
        )
    return None


def _check_annotation_room(template: Mapping[str, Any], resource_id: str, rgd: str) -> None:
    """V-32: `Orphaned` is recorded as an annotation on every apply, so the template must leave
    room for one: annotations a map (or absent), or a single `${...}` expression whose result
    the annotation is merged into. Anything else would silently lose the policy."""
    where = f'resource "{resource_id}": deletionPolicy {DELETION_POLICY_ORPHANED}'
    metadata = template.get("metadata")
    if metadata is None:  # created at render (and G-05 asks for metadata anyway)
        return
    if not isinstance(metadata, Mapping):
        raise _fail(f"{where}: metadata is not a map", "V-32", rgd, resource_id)
    annotations = metadata.get("annotations")
    if annotations is None or isinstance(annotations, Mapping):
        return
    if isinstance(annotations, str):
        if is_standalone(annotations):
            return
        raise _fail(
            f"{where}: metadata.annotations is a string but not a single ${{...}} expression",
            "V-32",
            rgd,
            resource_id,
        )
    raise _fail(f"{where}: metadata.annotations is not a map", "V-32", rgd, resource_id)


def _resource(
    raw: Any,
    index: int,
    *,
    seen: set[str],
    ids: frozenset[str],
    max_dims: int,
    rgd: str,
    deletion_policy_gate: bool = False,
    deferred_gate: bool = False,
    targets: TargetRules | None = None,
) -> ResourceInput:
    if not isinstance(raw, Mapping):
        raise _fail(f"resources[{index}] must be a map", "A-14", rgd)
    resource_id = _check_id(raw.get("id"), seen, rgd)
    template, external = raw.get("template"), raw.get("externalRef")
    if template is not None and external is not None:
        raise _fail(
            f'resource "{resource_id}": cannot use externalRef with template',
            "A-14",
            rgd,
            resource_id,
        )
    if template is None and external is None:
        raise _fail(
            f'resource "{resource_id}": exactly one of template or externalRef must be provided',
            "A-14",
            rgd,
            resource_id,
        )
    for_each = _for_each(raw.get("forEach"), resource_id, ids, max_dims, rgd)
    if external is not None:
        if for_each:
            raise _fail(
                f'resource "{resource_id}": cannot use externalRef with forEach',
                "A-17",
                rgd,
                resource_id,
            )
        external = _external_ref(external, resource_id, rgd)
    elif not isinstance(template, Mapping):
        raise ResourceBuildError(
            f"resource {resource_id} is not a valid Kubernetes object: template must be a map",
            rule="G-05",
            rgd=rgd,
            resource_id=resource_id,
        )
    policy = _deletion_policy(
        raw, resource_id, template=external is None, gate=deletion_policy_gate, rgd=rgd
    )
    if policy == DELETION_POLICY_ORPHANED:
        assert isinstance(template, Mapping)
        _check_annotation_room(template, resource_id, rgd)
    optional = raw.get("optional")
    problem = optional_problem(optional, gate=deferred_gate)
    if problem is not None:
        raise _fail(f'resource "{resource_id}": {problem}', "A-14", rgd, resource_id)
    return ResourceInput(
        id=resource_id,
        index=index,
        template=template,
        external_ref=external,
        ready_when=_as_list(raw.get("readyWhen"), "readyWhen", rgd, resource_id, "A-18"),
        include_when=_as_list(raw.get("includeWhen"), "includeWhen", rgd, resource_id, "A-19"),
        for_each=for_each,
        deletion_policy=policy,
        optional=optional is True,
        target=(targets or TargetRules()).of(raw, resource_id, rgd),
    )


@dataclass(frozen=True, slots=True)
class TargetRules:
    """How `target` blocks are read (kro.graph.targets): the MultiCluster gate, the registry's
    namespace, and the RGD-wide target every resource without its own inherits."""

    gate: bool = False
    secrets_namespace: str = ""
    default: str | None = None

    def of(self, raw: Mapping[str, Any], resource_id: str, rgd: str) -> str | None:
        found = parse_target(
            raw.get(TARGET_FIELD),
            where="target",
            gate=self.gate,
            secrets_namespace=self.secrets_namespace,
        )
        if isinstance(found, TargetProblem):
            raise RGDValidationError(
                f'resource "{resource_id}": {found.message}',
                rule="M-11",
                rgd=rgd,
                resource_id=resource_id,
                field_path=found.field_path,
            )
        return found if found is not None else self.default

    def spec_wide(self, spec: Mapping[str, Any], rgd: str) -> TargetRules:
        """These rules with the RGD's `spec.target` as the default (M-10)."""
        found = parse_target(
            spec.get(TARGET_FIELD),
            where="spec.target",
            gate=self.gate,
            secrets_namespace=self.secrets_namespace,
        )
        if isinstance(found, TargetProblem):
            raise RGDValidationError(
                found.message, rule="M-10", rgd=rgd, field_path=found.field_path
            )
        return replace(self, default=found)


def validate_resources(
    resources: Any,
    rgd: str,
    max_dimensions: int,
    *,
    deletion_policy_gate: bool = False,
    deferred_gate: bool = False,
    targets: TargetRules | None = None,
) -> list[ResourceInput]:
    """G-02/G-03/A-14/A-17/V-30..V-32 over `spec.resources`, in declaration order."""
    if resources is None:
        return []
    if not isinstance(resources, Sequence) or isinstance(resources, str):
        raise _fail("resources must be a list", "A-14", rgd)
    ids = frozenset(
        str(r["id"]) for r in resources if isinstance(r, Mapping) and isinstance(r.get("id"), str)
    )
    seen: set[str] = set()
    return [
        _resource(
            raw,
            i,
            seen=seen,
            ids=ids,
            max_dims=max_dimensions,
            rgd=rgd,
            deletion_policy_gate=deletion_policy_gate,
            deferred_gate=deferred_gate,
            targets=targets,
        )
        for i, raw in enumerate(resources)
    ]


# --- per-object checks (G-05, G-06, G-08, G-09) --------------------------------------------------


def _object_error(detail: str, rule: str, resource_id: str, rgd: str) -> ResourceBuildError:
    return ResourceBuildError(
        f"resource {resource_id} is not a valid Kubernetes object: {detail}",
        rule=rule,
        rgd=rgd,
        resource_id=resource_id,
    )


def validate_object_structure(obj: Mapping[str, Any], resource_id: str, rgd: str) -> None:
    """G-05/G-06: what is needed to know the kind at all (upstream's field order)."""
    api_version = obj.get("apiVersion")
    if "apiVersion" not in obj:
        raise _object_error("apiVersion field not found", "G-05", resource_id, rgd)
    if not isinstance(api_version, str):
        raise _object_error("apiVersion field is not a string", "G-05", resource_id, rgd)
    if not api_version or api_version.count("/") > 1 or api_version.startswith("/"):
        raise _object_error(f'invalid apiVersion format "{api_version}"', "G-06", resource_id, rgd)
    kind = obj.get("kind")
    if "kind" not in obj:
        raise _object_error("kind field not found", "G-05", resource_id, rgd)
    if not isinstance(kind, str):
        raise _object_error("kind field is not a string", "G-05", resource_id, rgd)
    lowered = kind.lower()
    if len(lowered) > DNS1035_MAX_LENGTH or not DNS1035_LABEL.match(lowered):
        raise _object_error(
            f'invalid kind "{kind}": the lowercased kind must be a valid DNS-1035 label',
            "G-06",
            resource_id,
            rgd,
        )
    if "metadata" not in obj:
        raise _object_error("metadata field not found", "G-05", resource_id, rgd)
    if not isinstance(obj.get("metadata"), Mapping):
        raise _object_error("metadata field is not a map", "G-05", resource_id, rgd)


def _is_set(value: Any) -> bool:
    return value is not None and not (isinstance(value, str) and not value.strip())


def validate_scope(
    metadata: Mapping[str, Any],
    *,
    resource_id: str,
    namespaced: bool,
    instance_namespaced: bool,
    selector: bool,
    rgd: str,
) -> None:
    """G-08: a namespace on a cluster-scoped kind is a mistake; a namespaced child of a
    cluster-scoped instance has no instance namespace to fall back to (selector refs may
    list across all namespaces instead)."""
    namespace = metadata.get("namespace")
    if not namespaced and _is_set(namespace):
        raise ResourceBuildError(
            f'resource "{resource_id}" is cluster-scoped and must not set metadata.namespace',
            rule="G-08",
            rgd=rgd,
            resource_id=resource_id,
            field_path="metadata.namespace",
        )
    if namespaced and not instance_namespaced and not selector and not _is_set(namespace):
        raise ResourceBuildError(
            f'resource "{resource_id}" is namespaced and must set metadata.namespace when the '
            "instance CRD is cluster-scoped",
            rule="G-08",
            rgd=rgd,
            resource_id=resource_id,
            field_path="metadata.namespace",
        )


def validate_reserved_metadata(metadata: Mapping[str, Any], resource_id: str, rgd: str) -> None:
    """G-09: kro's own labels/annotations identify children; a template must not forge them.
    Only the object's top-level metadata is checked (pod-template labels are the user's)."""
    for key, singular in (("labels", "label"), ("annotations", "annotation")):
        values = metadata.get(key)
        if not isinstance(values, Mapping):
            continue
        for name in values:
            for prefix in RESERVED_LABEL_PREFIXES:
                if isinstance(name, str) and name.startswith(prefix):
                    raise ResourceBuildError(
                        f'invalid {singular} for resource "{resource_id}". {key} with prefix '
                        f'"{prefix}" are reserved for internal use',
                        rule="G-09",
                        rgd=rgd,
                        resource_id=resource_id,
                        field_path=f"metadata.{key}",
                    )
