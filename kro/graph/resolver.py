"""kro.graph.resolver: where the graph builder learns the OpenAPI schema and scope of a kind.

The builder type-checks every template against the schema of its kind and needs to know
whether the kind is namespaced (G-07, G-08, G-10). kro.graph is pure, so that knowledge arrives
through the `SchemaResolver` Protocol:

* `resolve(gvk)` is **synchronous** and answers from memory, because the builder is a plain
  function called from both controllers and the CLI;
* `prefetch(gvks)` is **async** and is awaited by the caller *before* building, so a live
  implementation (in kro.controllers: discovery + OpenAPI v3 + a TTL cache, like upstream's
  `ClientDiscoveryResolver`) can do its I/O there. `referenced_gvks(spec)` lists what an RGD
  needs.

`OfflineSchemaResolver` serves a bundle of built-in Kubernetes kinds (package data
`kro/graph/schemas/builtin.json`) plus any CRD manifests the user passes, for `kro validate`,
`kro render` and tests. A bundle maps `"group/version/Kind"` (core group empty: `"/v1/Pod"`) to
`{"namespaced": bool, "schema": {...}, "resource": "<plural>"}` with every `$ref` already
resolved; `build_bundle` makes one from a kube-apiserver's `/openapi/v3` documents and
discovery.
"""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final, Protocol, TypedDict

from kro.graph.errors import GraphError

REF_PREFIX: Final = "#/components/schemas/"
GVK_EXTENSION: Final = "x-kubernetes-group-version-kind"
INT_OR_STRING: Final = "x-kubernetes-int-or-string"
PRESERVE_UNKNOWN: Final = "x-kubernetes-preserve-unknown-fields"
BUILTIN_BUNDLE: Final = "builtin.json.gz"


@dataclass(frozen=True, slots=True)
class GVK:
    """A kind as a manifest names it; the core group is the empty string."""

    group: str
    version: str
    kind: str

    @classmethod
    def from_api_version(cls, api_version: str, kind: str) -> GVK:
        """`apps/v1` + `Deployment`; `v1` + `ConfigMap` is the core group."""
        group, _, version = api_version.rpartition("/")
        return cls(group, version, kind)

    @classmethod
    def from_key(cls, key: str) -> GVK:
        """Parse a bundle key: `apps/v1/Deployment`, `/v1/Pod` or `v1/Pod`."""
        parts = key.split("/")
        if len(parts) == 2:
            return cls("", parts[0], parts[1])
        if len(parts) == 3 and parts[1] and parts[2]:
            return cls(parts[0], parts[1], parts[2])
        raise ValueError(f'invalid schema bundle key "{key}": want "group/version/Kind"')

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        """The bundle key, `group/version/Kind` (`/v1/Pod` for core)."""
        return f"{self.group}/{self.version}/{self.kind}"

    def __str__(self) -> str:
        return f"{self.api_version}, Kind={self.kind}"


@dataclass(frozen=True, slots=True)
class ResolvedSchema:
    """A kind's self-contained OpenAPI v3 schema and scope.

    `schema` is shared with the resolver's cache: treat it as read-only (deep-copy to modify).
    `resource` is the plural resource name when the source knows it.
    """

    gvk: GVK
    schema: Mapping[str, Any]
    namespaced: bool
    resource: str | None = None


class SchemaNotFoundError(GraphError):
    """No schema is known for the kind (G-07); builder: `failed to get schema for resource x: …`.

    Retrying helps only if the kind gets installed (a CRD created later) and the resolver's
    cache refreshes, which is why upstream re-resolves after a TTL. `lookup` says what a live
    resolver looked for and did not find, in upstream's words (see `unknown_group_version` and
    `unknown_kind`); the offline resolver leaves it empty and the CLI names the kind itself.
    """

    def __init__(self, gvk: GVK, lookup: str = "") -> None:
        self.gvk = gvk
        self.lookup = lookup
        super().__init__(f"{lookup}: schema not found" if lookup else "schema not found")


def unknown_group_version(gvk: GVK) -> SchemaNotFoundError:
    """The API server serves no OpenAPI document for the kind's group version.

    Upstream's discovery resolver says `cannot resolve group version "<group>/<version>"`
    (Go's GroupVersion string: just the version for the core group), so a user sees at once
    which API is not installed (e.g. an operator's CRDs are missing)."""
    return SchemaNotFoundError(gvk, f'cannot resolve group version "{gvk.api_version}"')


def unknown_kind(gvk: GVK) -> SchemaNotFoundError:
    """The group version is served but has no such kind (a typo, or a kind of another version).

    Upstream quotes Go's GroupVersionKind string, `<group>/<version>, Kind=<kind>`, whose
    group part is empty (a leading `/`) for the core group."""
    go_gvk = f"{gvk.group}/{gvk.version}, Kind={gvk.kind}"
    return SchemaNotFoundError(gvk, f'cannot resolve group version kind "{go_gvk}"')


class SchemaSourceError(ValueError):
    """A bundle or CRD file given to the offline resolver is malformed."""


class SchemaResolver(Protocol):
    """Resolves a kind to its OpenAPI v3 schema and scope."""

    def resolve(self, gvk: GVK) -> ResolvedSchema:
        """Answer from memory; raise SchemaNotFoundError for an unknown kind."""
        ...

    async def prefetch(self, gvks: Iterable[GVK]) -> None:
        """Load whatever `resolve` will need for these kinds; unknown kinds are not an error."""
        ...


class ClusterSchemas(Protocol):
    """The schemas of member clusters (MultiCluster): a resource whose literal target is a
    member is typed against that member's kinds (M-12)."""

    def resolver(self, cluster: str) -> SchemaResolver:
        """The member's resolver; raises GraphError naming the cluster when it is not a
        registered, Ready cluster."""
        ...


class ClusterSchemaNotFound(SchemaNotFoundError):
    """A kind a member cluster does not serve, for a resource whose literal target is it."""

    def __init__(self, gvk: GVK, cluster: str, lookup: str = "") -> None:
        where = f'in cluster "{cluster}"'
        super().__init__(gvk, f"{lookup} {where}" if lookup else where)
        self.cluster = cluster


class InCluster:
    """`resolver`, whose not-found errors name the member cluster it asked (M-12)."""

    def __init__(self, resolver: SchemaResolver, cluster: str) -> None:
        self._resolver = resolver
        self.cluster = cluster

    def resolve(self, gvk: GVK) -> ResolvedSchema:
        try:
            return self._resolver.resolve(gvk)
        except SchemaNotFoundError as error:
            raise ClusterSchemaNotFound(gvk, self.cluster, error.lookup) from None

    async def prefetch(self, gvks: Iterable[GVK]) -> None:
        await self._resolver.prefetch(gvks)


class BundleEntry(TypedDict, total=False):
    namespaced: bool
    schema: dict[str, Any]
    resource: str


def referenced_gvks(spec: Mapping[str, Any]) -> list[GVK]:
    """Kinds an RGD spec's templates and externalRefs name literally, in declaration order."""
    found: list[GVK] = []
    resources_ = spec.get("resources")
    for resource in resources_ if isinstance(resources_, list) else []:
        if not isinstance(resource, Mapping):
            continue
        for key in ("template", "externalRef"):
            obj = resource.get(key)
            if not isinstance(obj, Mapping):
                continue
            api_version, kind = obj.get("apiVersion"), obj.get("kind")
            if isinstance(api_version, str) and isinstance(kind, str) and "${" not in api_version:
                gvk = GVK.from_api_version(api_version, kind)
                if gvk not in found:
                    found.append(gvk)
    return found


# --- the offline resolver ----------------------------------------------------------------------


def _object_meta_schema(entries: Mapping[GVK, ResolvedSchema]) -> Mapping[str, Any] | None:
    """ObjectMeta as published for built-in kinds, to give CRD schemas a typed `metadata`."""
    preferred = GVK("", "v1", "ConfigMap")
    candidates = [preferred, *sorted(entries, key=lambda g: g.key)]
    for gvk in candidates:
        entry = entries.get(gvk)
        if entry is None:
            continue
        metadata = entry.schema.get("properties", {}).get("metadata")
        if isinstance(metadata, Mapping) and metadata.get("properties"):
            return metadata
    return None


class OfflineSchemaResolver:
    """Schemas from a bundle file plus CRD manifests; never touches the network.

    CRD schemas are completed the way the apiserver publishes them: `apiVersion` and `kind`
    string properties and a full ObjectMeta `metadata` (taken from the bundle), so
    `${crd.metadata.name}` type-checks the same as against a live cluster.
    """

    def __init__(
        self, bundle: Mapping[str, Any] | None = None, crds: Iterable[Mapping[str, Any]] = ()
    ) -> None:
        self._entries: dict[GVK, ResolvedSchema] = {}
        for key, entry in (bundle or {}).items():
            self._add_bundle_entry(key, entry)
        for crd in crds:
            self.add_crd(crd)

    @classmethod
    def from_files(
        cls, bundle_path: Path | None = None, crd_paths: Iterable[Path] = ()
    ) -> OfflineSchemaResolver:
        """Load a bundle (default: the built-in one shipped with kro) and CRD YAML files."""
        bundle = load_bundle(bundle_path) if bundle_path is not None else builtin_bundle()
        resolver = cls(bundle)
        for path in crd_paths:
            for crd in load_crd_documents(path):
                resolver.add_crd(crd)
        return resolver

    def _add_bundle_entry(self, key: str, entry: Any) -> None:
        gvk = GVK.from_key(key)
        if not isinstance(entry, Mapping) or not isinstance(entry.get("schema"), Mapping):
            raise SchemaSourceError(f'schema bundle entry "{key}": want {{"namespaced", "schema"}}')
        resource = entry.get("resource")
        self._entries[gvk] = ResolvedSchema(
            gvk=gvk,
            schema=entry["schema"],
            namespaced=bool(entry.get("namespaced", True)),
            resource=resource if isinstance(resource, str) else None,
        )

    def add_crd(self, crd: Mapping[str, Any]) -> None:
        """Serve every served version of a CustomResourceDefinition manifest."""
        spec = crd.get("spec")
        if crd.get("kind") != "CustomResourceDefinition" or not isinstance(spec, Mapping):
            raise SchemaSourceError("not a CustomResourceDefinition manifest")
        raw_names = spec.get("names")
        names: Mapping[str, Any] = raw_names if isinstance(raw_names, Mapping) else {}
        group, kind = str(spec.get("group", "")), str(names.get("kind", ""))
        if not group or not kind:
            raise SchemaSourceError("CustomResourceDefinition without spec.group or names.kind")
        namespaced = spec.get("scope", "Namespaced") == "Namespaced"
        object_meta = _object_meta_schema(self._entries)
        for version in spec.get("versions") or []:
            if not isinstance(version, Mapping) or not version.get("served", False):
                continue
            raw = (version.get("schema") or {}).get("openAPIV3Schema")
            schema = _complete_crd_schema(raw, object_meta)
            gvk = GVK(group, str(version.get("name", "")), kind)
            plural = names.get("plural")
            self._entries[gvk] = ResolvedSchema(
                gvk=gvk,
                schema=schema,
                namespaced=namespaced,
                resource=plural if isinstance(plural, str) else None,
            )

    def known_gvks(self) -> list[GVK]:
        """Every kind this resolver can answer for, sorted by bundle key."""
        return sorted(self._entries, key=lambda g: g.key)

    def resolve(self, gvk: GVK) -> ResolvedSchema:
        entry = self._entries.get(gvk)
        if entry is None:
            raise SchemaNotFoundError(gvk)
        return entry

    async def prefetch(self, gvks: Iterable[GVK]) -> None:
        """Nothing to fetch: everything is in memory already."""


def _complete_crd_schema(raw: Any, object_meta: Mapping[str, Any] | None) -> dict[str, Any]:
    schema: dict[str, Any] = (
        copy.deepcopy(dict(raw))
        if isinstance(raw, Mapping)
        else {"type": "object", PRESERVE_UNKNOWN: True}
    )
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        if schema.get(PRESERVE_UNKNOWN):
            return schema
        properties = schema["properties"] = {}
    properties.setdefault("apiVersion", {"type": "string"})
    properties.setdefault("kind", {"type": "string"})
    metadata = properties.get("metadata")
    if object_meta is not None and (
        not isinstance(metadata, Mapping) or not metadata.get("properties")
    ):
        properties["metadata"] = copy.deepcopy(dict(object_meta))
    else:
        properties.setdefault("metadata", {"type": "object"})
    return schema


# --- files -------------------------------------------------------------------------------------


def load_bundle(path: Path) -> dict[str, Any]:
    """Read a bundle JSON file."""
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SchemaSourceError(f"cannot read schema bundle {path}: {error}") from error
    if not isinstance(loaded, dict):
        raise SchemaSourceError(f"schema bundle {path}: want a JSON object")
    return loaded


def builtin_bundle() -> dict[str, Any]:
    """The bundle of built-in Kubernetes kinds shipped as package data."""
    raw = resources.files("kro.graph").joinpath("schemas", BUILTIN_BUNDLE).read_bytes()
    loaded = json.loads(gzip.decompress(raw) if BUILTIN_BUNDLE.endswith(".gz") else raw)
    if not isinstance(loaded, dict):
        raise SchemaSourceError("built-in schema bundle: want a JSON object")
    return loaded


def load_crd_documents(path: Path) -> list[dict[str, Any]]:
    """Every CustomResourceDefinition in a (multi-document) YAML file; other kinds skipped."""
    import yaml  # only a CLI reading CRD files needs it: not imported by a controller's start

    try:
        documents = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    except (OSError, yaml.YAMLError) as error:
        raise SchemaSourceError(f"cannot read CRD file {path}: {error}") from error
    crds = [
        d for d in documents if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"
    ]
    if not crds:
        raise SchemaSourceError(f"{path}: no CustomResourceDefinition found")
    return crds


# --- building a bundle from a live apiserver's documents ---------------------------------------


def _int_or_string(schema: dict[str, Any]) -> dict[str, Any]:
    """Rewrite `format: int-or-string` the way structural CRD schemas spell it."""
    for key in ("type", "format", "oneOf", "anyOf"):
        schema.pop(key, None)
    schema["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    schema[INT_OR_STRING] = True
    return schema


_SCHEMA_MAPS: Final = frozenset({"properties", "patternProperties", "definitions"})
_SCHEMA_LISTS: Final = frozenset({"allOf", "anyOf", "oneOf", "items"})
_SCHEMA_VALUES: Final = frozenset({"items", "additionalProperties", "additionalItems", "not"})


class _RefResolver:
    """Inlines `$ref`s of one OpenAPI v3 document; a reference cycle becomes a free-form object."""

    def __init__(self, components: Mapping[str, Any]) -> None:
        self._components = components

    def resolve(self, schema: Any, stack: tuple[str, ...] = ()) -> Any:
        """A copy of `schema` without `$ref`s; only schema-valued keywords are descended."""
        if not isinstance(schema, Mapping):
            return copy.deepcopy(schema)
        if "$ref" in schema:
            return self._inline(schema, str(schema["$ref"]), stack)
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], Mapping):
            # OpenAPI v3 wraps a described/defaulted reference as `allOf: [{$ref}]` + siblings.
            siblings = {k: v for k, v in schema.items() if k != "allOf"}
            return self.resolve({**all_of[0], **siblings}, stack)
        resolved: dict[str, Any] = {}
        for key, value in schema.items():
            if key in _SCHEMA_MAPS and isinstance(value, Mapping):
                resolved[key] = {name: self.resolve(sub, stack) for name, sub in value.items()}
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                resolved[key] = [self.resolve(sub, stack) for sub in value]
            elif key in _SCHEMA_VALUES:
                resolved[key] = self.resolve(value, stack)
            else:
                resolved[key] = copy.deepcopy(value)
        if resolved.get("format") == "int-or-string":
            return _int_or_string(resolved)
        return resolved

    def _inline(self, schema: Mapping[str, Any], ref: str, stack: tuple[str, ...]) -> Any:
        name = ref.removeprefix(REF_PREFIX)
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        target = self._components.get(name)
        if not ref.startswith(REF_PREFIX) or not isinstance(target, Mapping):
            raise SchemaSourceError(f"unresolvable $ref {ref}")
        if name in stack:
            placeholder: dict[str, Any] = {"type": "object", PRESERVE_UNKNOWN: True}
            if "description" in target:
                placeholder["description"] = target["description"]
            return {**placeholder, **self.resolve(siblings, stack)}
        resolved = self.resolve(target, (*stack, name))
        return {**resolved, **self.resolve(siblings, stack)}


def _document_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def _find_schema(
    documents: Mapping[str, Mapping[str, Any]], gvk: GVK
) -> tuple[Mapping[str, Any], str] | None:
    """The document and component name whose GVK extension names exactly this kind."""
    wanted = {"group": gvk.group, "version": gvk.version, "kind": gvk.kind}
    preferred = _document_path(gvk.group, gvk.version)
    ordered = sorted(documents.items(), key=lambda item: (item[0].strip("/") != preferred, item[0]))
    for _, document in ordered:
        components = document.get("components", {}).get("schemas", {})
        for name, component in sorted(components.items()):
            extension = component.get(GVK_EXTENSION) if isinstance(component, Mapping) else None
            if isinstance(extension, list) and wanted in extension:
                return document, name
    return None


def build_bundle(
    openapi_v3_documents: Mapping[str, Mapping[str, Any]],
    discovery: Iterable[Mapping[str, Any]],
) -> dict[str, BundleEntry]:
    """Make a bundle from `/openapi/v3/<path>` documents and discovery `APIResourceList`s.

    `openapi_v3_documents` maps a path such as `api/v1` or `apis/apps/v1` to its document;
    `discovery` yields the `APIResourceList` of each group version (`/api/v1`, `/apis/g/v`).
    Every top-level resource kind found in both becomes an entry with all `$ref`s inlined;
    subresources (`pods/status`) and kinds without a published schema are skipped.
    """
    bundle: dict[str, BundleEntry] = {}
    for resource_list in discovery:
        group_version = str(resource_list.get("groupVersion", ""))
        list_group, _, list_version = group_version.rpartition("/")
        for resource in resource_list.get("resources") or []:
            name = str(resource.get("name", ""))
            if not name or "/" in name:
                continue
            gvk = GVK(
                str(resource.get("group") or list_group),
                str(resource.get("version") or list_version),
                str(resource.get("kind", "")),
            )
            found = _find_schema(openapi_v3_documents, gvk)
            if found is None or gvk.key in bundle:
                continue
            document, component = found
            refs = _RefResolver(document.get("components", {}).get("schemas", {}))
            schema = refs.resolve({"$ref": REF_PREFIX + component})
            bundle[gvk.key] = {
                "namespaced": bool(resource.get("namespaced", False)),
                "resource": name,
                "schema": schema,
            }
    return dict(sorted(bundle.items()))
