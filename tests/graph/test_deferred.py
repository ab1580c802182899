"""DeferredSchemaResolution at compile time: which resources may wait for a kind that is not
served yet, and which keep failing fast (a typo, a discovery error)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from kro.graph.builder import build_graph, build_graph_async
from kro.graph.errors import GraphError
from kro.graph.graph_kind import compile_graph
from kro.graph.model import NodeType
from kro.graph.options import BuildOptions
from kro.graph.resolver import GVK, OfflineSchemaResolver, ResolvedSchema, unknown_kind
from kro.runtime.errors import ApiError

ON = BuildOptions(deferred_schema_resolution=True)
ESTABLISHED = (
    '${crd.status.?conditions.orValue([]).exists(c, c.type == "Established" && '
    'c.status == "True")}'
)


@pytest.fixture(scope="module")
def resolver() -> OfflineSchemaResolver:
    return OfflineSchemaResolver.from_files()


def installer(**widget: Any) -> dict[str, Any]:
    """An RGD whose first resource installs the Widget CRD and whose second uses the kind."""
    return {
        "metadata": {"name": "installer"},
        "spec": {
            "schema": {"apiVersion": "v1alpha1", "kind": "Installer", "spec": {"size": "string"}},
            "resources": [
                {
                    "id": "crd",
                    "template": {
                        "apiVersion": "apiextensions.k8s.io/v1",
                        "kind": "CustomResourceDefinition",
                        "metadata": {"name": "widgets.deferred.example.com"},
                        "spec": {"group": "deferred.example.com"},
                    },
                },
                {
                    "id": "widget",
                    "template": {
                        "apiVersion": "deferred.example.com/v1",
                        "kind": "Widget",
                        "metadata": {"name": "${schema.metadata.name}"},
                        "spec": {"size": "${schema.spec.size}"},
                    },
                    **widget,
                },
                {
                    "id": "summary",
                    "template": {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "${schema.metadata.name}"},
                        "data": {"size": "${string(widget.spec.size)}"},
                    },
                },
            ],
        },
    }


def test_an_includewhen_on_another_resource_defers_the_unserved_kind(
    resolver: OfflineSchemaResolver,
) -> None:
    graph = build_graph(installer(includeWhen=[ESTABLISHED]), resolver, options=ON)
    widget = graph.node("widget")
    assert (widget.deferred, widget.dynamic_type) == (True, True)
    assert widget.gvk == GVK("deferred.example.com", "v1", "Widget")
    assert widget.resource == "widgets"
    assert widget.dependencies == ("crd",)
    # Its reader compiles against an untyped value, and the kinds that are served stay typed.
    assert graph.node("summary").dependencies == ("widget",)
    assert not graph.node("crd").deferred
    assert not graph.node("summary").dynamic_type


def test_with_the_gate_off_the_same_rgd_fails_as_before(resolver: OfflineSchemaResolver) -> None:
    with pytest.raises(GraphError, match=r'resource "widget".*schema not found'):
        build_graph(installer(includeWhen=[ESTABLISHED]), resolver)


@pytest.mark.parametrize(
    "widget",
    [
        {},  # always needed: a typo must fail fast
        {"includeWhen": ["${schema.spec.size != ''}"]},  # decided by the instance alone
        {"includeWhen": ["${schema.spec.size != ''}"], "optional": False},
    ],
    ids=["no-includewhen", "schema-only-includewhen", "optional-false"],
)
def test_a_resource_that_cannot_wait_keeps_its_build_error(
    resolver: OfflineSchemaResolver, widget: dict[str, Any]
) -> None:
    with pytest.raises(GraphError, match="failed to get schema for resource widget"):
        build_graph(installer(**widget), resolver, options=ON)


def test_optional_defers_without_includewhen_and_needs_the_gate(
    resolver: OfflineSchemaResolver,
) -> None:
    graph = build_graph(installer(optional=True), resolver, options=ON)
    assert graph.node("widget").deferred
    with pytest.raises(GraphError, match="optional requires the DeferredSchemaResolution"):
        build_graph(installer(optional=True), resolver)
    with pytest.raises(GraphError, match="optional must be a boolean"):
        build_graph(installer(optional="yes"), resolver, options=ON)


def test_a_served_kind_is_never_deferred(resolver: OfflineSchemaResolver) -> None:
    rgd = installer(includeWhen=[ESTABLISHED])
    rgd["spec"]["resources"][1]["template"]["apiVersion"] = "v1"
    rgd["spec"]["resources"][1]["template"]["kind"] = "ConfigMap"
    rgd["spec"]["resources"][1]["template"].pop("spec")
    rgd["spec"]["resources"][2]["template"]["data"] = {"name": "${widget.metadata.name}"}
    graph = build_graph(rgd, resolver, options=ON)
    assert not graph.node("widget").deferred
    assert not graph.node("widget").dynamic_type


def widget_crd(size_type: str) -> dict[str, Any]:
    spec = {"type": "object", "properties": {"size": {"type": size_type}}}
    return {
        "kind": "CustomResourceDefinition",
        "spec": {
            "group": "deferred.example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}
                    },
                }
            ],
        },
    }


def test_once_the_kind_is_served_it_compiles_typed() -> None:
    served = OfflineSchemaResolver.from_files()
    served.add_crd(widget_crd("string"))
    graph = build_graph(installer(includeWhen=[ESTABLISHED]), served, options=ON)
    assert not graph.node("widget").deferred
    assert not graph.node("widget").dynamic_type
    # Typed from then on: a string where the kind wants an integer is the usual build error.
    mismatched = OfflineSchemaResolver.from_files()
    mismatched.add_crd(widget_crd("integer"))
    with pytest.raises(GraphError, match="widget"):
        build_graph(installer(includeWhen=[ESTABLISHED]), mismatched, options=ON)


class _Outage:
    """A live resolver whose discovery fails: prefetch raises, as LiveSchemaResolver does."""

    def resolve(self, gvk: GVK) -> ResolvedSchema:
        raise AssertionError("the build must not run after a failed prefetch")

    async def prefetch(self, gvks: Iterable[GVK]) -> None:
        raise ApiError(status=503, reason="ServiceUnavailable", message="discovery is down")


async def test_a_discovery_error_is_raised_not_deferred() -> None:
    with pytest.raises(ApiError, match="discovery is down"):
        await build_graph_async(installer(includeWhen=[ESTABLISHED]), _Outage(), options=ON)


class _Refusing(OfflineSchemaResolver):
    """Resolves what it knows; for the Widget kind, some other failure than "not served"."""

    def resolve(self, gvk: GVK) -> ResolvedSchema:
        if gvk.kind == "Widget":
            raise GraphError("schema of Widget could not be converted")
        return super().resolve(gvk)


def test_only_a_kind_not_served_defers(resolver: OfflineSchemaResolver) -> None:
    refusing = _Refusing()
    refusing._entries = resolver._entries
    with pytest.raises(GraphError, match="could not be converted"):
        build_graph(installer(includeWhen=[ESTABLISHED]), refusing, options=ON)
    absent = unknown_kind(GVK("deferred.example.com", "v1", "Widget"))
    assert "schema not found" in str(absent)


# --- Graphs -------------------------------------------------------------------------------


def claims_graph(**claimants: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "claims", "namespace": "team"},
        "spec": {
            "nodes": [
                {
                    "id": "crd",
                    "template": {
                        "apiVersion": "apiextensions.k8s.io/v1",
                        "kind": "CustomResourceDefinition",
                        "metadata": {"name": "claims.deferred.example.com"},
                        "spec": {"group": "deferred.example.com"},
                    },
                },
                {
                    "id": "claimants",
                    "ref": {
                        "apiVersion": "deferred.example.com/v1alpha1",
                        "kind": "Claim",
                        "metadata": {"selector": {}},
                    },
                    **claimants,
                },
                {"id": "count", "def": {"n": "${size(claimants)}"}},
                {
                    "id": "inner",
                    "graph": {
                        "nodes": [
                            {
                                "id": "mark",
                                "forEach": [{"c": "${claimants}"}],
                                "includeWhen": ["${count.n > 0}"],
                                "patch": {
                                    "apiVersion": "deferred.example.com/v1alpha1",
                                    "kind": "Claim",
                                    "metadata": {
                                        "name": "${c.metadata.name}",
                                        "namespace": "${c.metadata.namespace}",
                                    },
                                    "status": {"seen": True},
                                },
                            }
                        ]
                    },
                },
            ]
        },
    }


def test_a_graph_ref_gated_on_its_crd_compiles_deferred(resolver: OfflineSchemaResolver) -> None:
    graph = compile_graph(claims_graph(includeWhen=[ESTABLISHED]), resolver, options=ON)
    claimants = graph.node("claimants")
    assert claimants.type is NodeType.EXTERNAL_COLLECTION
    assert claimants.deferred
    assert claimants.gvk.kind == "Claim"
    mark = graph.node("inner/mark")  # nested: eligible through an outer node it reads
    assert mark.deferred
    assert mark.type is NodeType.PATCH
    with pytest.raises(GraphError, match=r'"claimants".*schema not found'):
        compile_graph(claims_graph(includeWhen=[ESTABLISHED]), resolver)


def test_a_graph_node_without_a_runtime_signal_fails(resolver: OfflineSchemaResolver) -> None:
    with pytest.raises(GraphError, match="claimants"):
        compile_graph(claims_graph(), resolver, options=ON)
    graph = compile_graph(claims_graph(optional=True), resolver, options=ON)
    assert graph.node("claimants").deferred
    with pytest.raises(GraphError, match="optional requires the DeferredSchemaResolution"):
        compile_graph(claims_graph(optional=True), resolver)


def test_optional_is_refused_on_def_and_graph_nodes(resolver: OfflineSchemaResolver) -> None:
    spec = claims_graph(optional=True)
    spec["spec"]["nodes"][2]["optional"] = True
    with pytest.raises(GraphError, match="optional is not supported on def nodes"):
        compile_graph(spec, resolver, options=ON)
