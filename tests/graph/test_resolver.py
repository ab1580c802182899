"""kro.graph.resolver: GVKs, the offline resolver, CRD files and bundle building (G-07)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kro.graph.errors import GraphError
from kro.graph.resolver import (
    GVK,
    OfflineSchemaResolver,
    SchemaNotFoundError,
    SchemaResolver,
    SchemaSourceError,
    build_bundle,
    builtin_bundle,
    load_crd_documents,
    referenced_gvks,
)

DATA = Path(__file__).parent / "data"
BUNDLE = DATA / "schema_bundle.json"
WIDGETS = DATA / "widgets_crd.yaml"


@pytest.fixture
def resolver() -> OfflineSchemaResolver:
    return OfflineSchemaResolver.from_files(BUNDLE, [WIDGETS])


# --- GVK ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("api_version", "kind", "gvk", "key"),
    [
        ("apps/v1", "Deployment", GVK("apps", "v1", "Deployment"), "apps/v1/Deployment"),
        ("v1", "ConfigMap", GVK("", "v1", "ConfigMap"), "/v1/ConfigMap"),
        ("kro.run/v1alpha1", "App", GVK("kro.run", "v1alpha1", "App"), "kro.run/v1alpha1/App"),
    ],
    ids=["apps", "core", "kro"],
)
def test_gvk_round_trips(api_version: str, kind: str, gvk: GVK, key: str) -> None:
    assert GVK.from_api_version(api_version, kind) == gvk
    assert gvk.api_version == api_version
    assert gvk.key == key
    assert GVK.from_key(key) == gvk


def test_gvk_key_parsing_accepts_the_short_core_form_and_rejects_garbage() -> None:
    assert GVK.from_key("v1/Pod") == GVK("", "v1", "Pod")
    for bad in ("Pod", "a/b/c/d", "apps//Deployment"):
        with pytest.raises(ValueError, match="invalid schema bundle key"):
            GVK.from_key(bad)
    assert str(GVK("apps", "v1", "Deployment")) == "apps/v1, Kind=Deployment"


# --- offline resolver --------------------------------------------------------------------------


def test_bundle_entries_resolve_with_scope_and_resource(resolver: OfflineSchemaResolver) -> None:
    config_map = resolver.resolve(GVK("", "v1", "ConfigMap"))
    assert config_map.namespaced is True
    assert config_map.resource == "configmaps"
    assert config_map.schema["properties"]["data"]["additionalProperties"] == {"type": "string"}
    namespace = resolver.resolve(GVK("", "v1", "Namespace"))
    assert namespace.namespaced is False


def test_unknown_kinds_raise_schema_not_found(resolver: OfflineSchemaResolver) -> None:
    gvk = GVK("example.com", "v9", "Gadget")
    with pytest.raises(SchemaNotFoundError, match=r"^schema not found$") as caught:
        resolver.resolve(gvk)
    assert caught.value.gvk == gvk
    assert isinstance(caught.value, GraphError)


def test_crds_serve_only_served_versions(resolver: OfflineSchemaResolver) -> None:
    widget = resolver.resolve(GVK("example.com", "v1", "Widget"))
    assert widget.namespaced is False
    assert widget.resource == "widgets"
    with pytest.raises(SchemaNotFoundError):
        resolver.resolve(GVK("example.com", "v1beta1", "Widget"))


def test_crd_schemas_are_completed_like_published_ones(resolver: OfflineSchemaResolver) -> None:
    properties = resolver.resolve(GVK("example.com", "v1", "Widget")).schema["properties"]
    assert properties["apiVersion"] == {"type": "string"}
    assert properties["kind"] == {"type": "string"}
    bundle_meta = resolver.resolve(GVK("", "v1", "ConfigMap")).schema["properties"]["metadata"]
    assert properties["metadata"] == bundle_meta
    assert properties["spec"]["properties"]["size"] == {"type": "integer"}


def test_crd_without_bundle_keeps_an_opaque_metadata() -> None:
    (crd,) = load_crd_documents(WIDGETS)
    resolver = OfflineSchemaResolver(crds=[crd])
    schema = resolver.resolve(GVK("example.com", "v1", "Widget")).schema
    assert schema["properties"]["metadata"] == {"type": "object"}


def test_crd_without_schema_is_free_form() -> None:
    crd: dict[str, Any] = {
        "kind": "CustomResourceDefinition",
        "spec": {
            "group": "x.io",
            "names": {"kind": "Thing", "plural": "things"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": True}],
        },
    }
    resolved = OfflineSchemaResolver(crds=[crd]).resolve(GVK("x.io", "v1", "Thing"))
    assert resolved.schema == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert resolved.namespaced is True


def test_generated_kro_crds_can_be_added() -> None:
    from kro.graph.crd import synthesize_crd

    crd = synthesize_crd(
        {"apiVersion": "v1alpha1", "kind": "TenantEnvironment"},
        {"type": "object", "properties": {"tenantId": {"type": "string"}}},
    )
    resolver = OfflineSchemaResolver(json.loads(BUNDLE.read_text()), crds=[crd])
    resolved = resolver.resolve(GVK("kro.run", "v1alpha1", "TenantEnvironment"))
    assert resolved.resource == "tenantenvironments"
    assert "state" in resolved.schema["properties"]["status"]["properties"]


def test_known_gvks_are_sorted(resolver: OfflineSchemaResolver) -> None:
    keys = [gvk.key for gvk in resolver.known_gvks()]
    assert keys == sorted(keys)
    assert "example.com/v1/Widget" in keys


async def test_prefetch_is_a_no_op(resolver: OfflineSchemaResolver) -> None:
    protocol_view: SchemaResolver = resolver
    await protocol_view.prefetch([GVK("", "v1", "ConfigMap"), GVK("x", "v1", "Missing")])
    assert protocol_view.resolve(GVK("", "v1", "ConfigMap")).namespaced


def test_builtin_bundle_is_package_data() -> None:
    assert isinstance(builtin_bundle(), dict)
    OfflineSchemaResolver.from_files(crd_paths=[WIDGETS])


@pytest.mark.parametrize(
    ("bundle", "message"),
    [
        ({"Pod": {"schema": {}}}, "invalid schema bundle key"),
        ({"/v1/Pod": {"namespaced": True}}, "want"),
        ({"/v1/Pod": []}, "want"),
    ],
    ids=["bad-key", "no-schema", "not-an-object"],
)
def test_malformed_bundles_are_rejected(bundle: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        OfflineSchemaResolver(bundle)


def test_malformed_files_are_rejected(tmp_path: Path) -> None:
    not_json = tmp_path / "bundle.json"
    not_json.write_text("{")
    with pytest.raises(SchemaSourceError, match="cannot read schema bundle"):
        OfflineSchemaResolver.from_files(not_json)
    no_crd = tmp_path / "cm.yaml"
    no_crd.write_text("kind: ConfigMap\n")
    with pytest.raises(SchemaSourceError, match="no CustomResourceDefinition found"):
        load_crd_documents(no_crd)
    with pytest.raises(SchemaSourceError, match="not a CustomResourceDefinition"):
        OfflineSchemaResolver().add_crd({"kind": "ConfigMap"})


def test_referenced_gvks_lists_templates_and_external_refs_once() -> None:
    spec = {
        "resources": [
            {"id": "a", "template": {"apiVersion": "apps/v1", "kind": "Deployment"}},
            {"id": "b", "externalRef": {"apiVersion": "v1", "kind": "ConfigMap"}},
            {"id": "c", "template": {"apiVersion": "apps/v1", "kind": "Deployment"}},
            {"id": "d", "template": {"apiVersion": "${schema.spec.v}", "kind": "X"}},
            {"id": "e", "template": {"kind": "NoVersion"}},
        ]
    }
    assert referenced_gvks(spec) == [GVK("apps", "v1", "Deployment"), GVK("", "v1", "ConfigMap")]
    assert referenced_gvks({}) == []


# --- build_bundle ------------------------------------------------------------------------------

META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
INTSTR = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"


def ref(name: str) -> dict[str, str]:
    return {"$ref": "#/components/schemas/" + name}


CORE_DOC: dict[str, Any] = {
    "components": {
        "schemas": {
            META: {"type": "object", "properties": {"name": {"type": "string"}}},
            INTSTR: {"type": "string", "format": "int-or-string"},
            "io.k8s.api.core.v1.ServicePort": {
                "type": "object",
                "properties": {"targetPort": {"allOf": [ref(INTSTR)], "description": "tp"}},
            },
            "io.k8s.api.core.v1.Service": {
                "type": "object",
                "x-kubernetes-group-version-kind": [
                    {"group": "", "version": "v1", "kind": "Service"}
                ],
                "properties": {
                    "metadata": {"allOf": [ref(META)], "default": {}, "description": "meta"},
                    "spec": {
                        "type": "object",
                        "properties": {
                            "ports": {
                                "type": "array",
                                "items": ref("io.k8s.api.core.v1.ServicePort"),
                            }
                        },
                    },
                },
            },
        }
    }
}

APIEXT_DOC: dict[str, Any] = {
    "components": {
        "schemas": {
            "props": {
                "type": "object",
                "description": "recursive",
                "properties": {
                    "$ref": {"type": "string"},
                    "not": ref("props"),
                    "properties": {"type": "object", "additionalProperties": ref("props")},
                },
            },
            "crd": {
                "type": "object",
                "x-kubernetes-group-version-kind": [
                    {
                        "group": "apiextensions.k8s.io",
                        "version": "v1",
                        "kind": "CustomResourceDefinition",
                    }
                ],
                "properties": {"schema": ref("props")},
            },
        }
    }
}

DISCOVERY = [
    {
        "groupVersion": "v1",
        "resources": [
            {"name": "services", "namespaced": True, "kind": "Service"},
            {"name": "services/status", "namespaced": True, "kind": "Service"},
            {"name": "bindings", "namespaced": True, "kind": "Binding"},
        ],
    },
    {
        "groupVersion": "apiextensions.k8s.io/v1",
        "resources": [
            {
                "name": "customresourcedefinitions",
                "namespaced": False,
                "kind": "CustomResourceDefinition",
            }
        ],
    },
]


def refs_in(schema: Any) -> list[str]:
    """`$ref`s left in schema positions (a *property named* `$ref` is data, not a reference)."""
    if not isinstance(schema, dict):
        return []
    found = [schema["$ref"]] if isinstance(schema.get("$ref"), str) else []
    for sub in (schema.get("properties") or {}).values():
        found += refs_in(sub)
    for key in ("items", "additionalProperties", "not"):
        found += refs_in(schema.get(key))
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(key) or []:
            found += refs_in(sub)
    return found


@pytest.fixture
def bundle() -> dict[str, Any]:
    built = build_bundle(
        {"api/v1": CORE_DOC, "apis/apiextensions.k8s.io/v1": APIEXT_DOC}, DISCOVERY
    )
    return dict(built)


def test_bundle_has_one_entry_per_resource_kind_with_a_schema(bundle: dict[str, Any]) -> None:
    assert list(bundle) == [
        "/v1/Service",
        "apiextensions.k8s.io/v1/CustomResourceDefinition",
    ]
    assert bundle["/v1/Service"]["namespaced"] is True
    assert bundle["/v1/Service"]["resource"] == "services"
    assert bundle["apiextensions.k8s.io/v1/CustomResourceDefinition"]["namespaced"] is False


def test_refs_are_inlined_and_all_of_wrappers_flattened(bundle: dict[str, Any]) -> None:
    service = bundle["/v1/Service"]["schema"]
    assert service["properties"]["metadata"] == {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "default": {},
        "description": "meta",
    }
    port = service["properties"]["spec"]["properties"]["ports"]["items"]
    assert port["properties"]["targetPort"] == {
        "description": "tp",
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }


def test_recursive_refs_become_free_form_objects(bundle: dict[str, Any]) -> None:
    schema = bundle["apiextensions.k8s.io/v1/CustomResourceDefinition"]["schema"]
    props = schema["properties"]["schema"]
    assert props["properties"]["$ref"] == {"type": "string"}  # a field named $ref is data
    assert props["properties"]["not"] == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "description": "recursive",
    }
    assert props["properties"]["properties"]["additionalProperties"][
        "x-kubernetes-preserve-unknown-fields"
    ]


def test_bundle_schemas_are_self_contained(bundle: dict[str, Any]) -> None:
    for key, entry in bundle.items():
        assert refs_in(entry["schema"]) == [], key


def test_bundle_is_json_and_loads_into_the_resolver(bundle: dict[str, Any]) -> None:
    resolver = OfflineSchemaResolver(json.loads(json.dumps(bundle)))
    assert resolver.resolve(GVK("", "v1", "Service")).resource == "services"


def test_unresolvable_refs_are_reported() -> None:
    doc = {
        "components": {
            "schemas": {
                "x": {
                    "x-kubernetes-group-version-kind": [
                        {"group": "", "version": "v1", "kind": "X"}
                    ],
                    "properties": {"a": ref("missing")},
                }
            }
        }
    }
    discovery = [{"groupVersion": "v1", "resources": [{"name": "xs", "kind": "X"}]}]
    with pytest.raises(SchemaSourceError, match="unresolvable"):
        build_bundle({"api/v1": doc}, discovery)
