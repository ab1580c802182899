"""The builder's entry points: options, the async variant's prefetch, resolvers without
built-in kinds, and how foreign failures (resolver, CEL declarations) are reported."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from test_builder_fixtures import build, build_error, configmap, network, resolver, rgd

from kro.cel import CelDeclarationError, CelEnvironment
from kro.graph.build_errors import BuildError, InstanceSchemaError, ResourceBuildError
from kro.graph.builder import BuildOptions, build_graph, build_graph_async, split_rgd
from kro.graph.errors import GraphError
from kro.graph.resolver import GVK, OfflineSchemaResolver, ResolvedSchema


def test_build_options_defaults() -> None:
    options = BuildOptions()
    assert (
        options.max_collection_size,
        options.max_collection_dimension_size,
        options.omit_function,
    ) == (1000, 10, False)


def test_split_rgd() -> None:
    obj = rgd(name="x")
    assert split_rgd(obj) == ("x", obj["spec"])
    assert split_rgd(obj["spec"]) == ("", obj["spec"])


class RecordingResolver:
    """Delegates to the shared resolver and records what was prefetched."""

    def __init__(self) -> None:
        self.prefetched: list[GVK] = []
        self.inner = resolver()

    def resolve(self, gvk: GVK) -> ResolvedSchema:
        return self.inner.resolve(gvk)

    async def prefetch(self, gvks: Iterable[GVK]) -> None:
        self.prefetched.extend(gvks)


async def test_build_graph_async_prefetches_every_named_kind() -> None:
    recording = RecordingResolver()
    graph = await build_graph_async(rgd(network(), configmap("cm")), recording)
    assert graph.topological_order == ("net", "cm")
    assert recording.prefetched == [
        GVK("example.com", "v1", "Network"),
        GVK("", "v1", "ConfigMap"),
        GVK("", "v1", "ConfigMap"),
    ]


def test_resolver_without_built_in_kinds_uses_a_fallback_object_meta() -> None:
    bare = OfflineSchemaResolver()
    bare.add_crd(
        {
            "kind": "CustomResourceDefinition",
            "spec": {
                "group": "example.com",
                "names": {"kind": "Thing", "plural": "things"},
                "versions": [{"name": "v1", "served": True, "schema": {"openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
            },
        }
    )  # fmt: skip
    thing = {
        "id": "thing",
        "template": {
            "apiVersion": "example.com/v1",
            "kind": "Thing",
            "metadata": {"name": "${schema.metadata.name}", "labels": "${schema.metadata.labels}"},
        },
    }
    graph = build_graph(rgd(thing), bare)
    assert graph.nodes["thing"].fields[0].expressions[0].output_type.cel_name == "string"


class FailingResolver:
    def resolve(self, gvk: GVK) -> ResolvedSchema:
        raise GraphError("discovery failed: connection refused")

    async def prefetch(self, gvks: Iterable[GVK]) -> None:
        return None


def test_resolver_errors_are_reported_per_resource() -> None:
    with pytest.raises(ResourceBuildError) as caught:
        build_graph(rgd(configmap("cm")), FailingResolver())
    assert str(caught.value) == (
        'failed to build resource "cm": failed to get schema for resource cm: discovery failed: '
        "connection refused"
    )
    assert isinstance(caught.value.__cause__, GraphError)


@pytest.mark.parametrize(
    ("variable", "error", "resource_id"),
    [("cm", ResourceBuildError, "cm"), ("schema", InstanceSchemaError, None)],
    ids=["resource", "schema"],
)
def test_declaration_failures_are_build_errors(
    monkeypatch: pytest.MonkeyPatch, variable: str, error: type[BuildError], resource_id: str | None
) -> None:
    original = CelEnvironment.declare

    def declare(self: CelEnvironment, name: str, schema: Any = None) -> Any:
        if name == variable:
            raise CelDeclarationError(name=name, message="schema not representable")
        return original(self, name, schema)

    monkeypatch.setattr(CelEnvironment, "declare", declare)
    err = build_error(rgd(configmap("cm")))
    assert isinstance(err, error)
    assert (err.rule, err.resource_id) == ("G-18", resource_id)
    assert "schema not representable" in str(err)


def test_every_error_names_the_rgd() -> None:
    for obj in (
        rgd(kind="bad"),
        rgd(configmap("my-cm")),
        rgd(network(foo=1)),
        rgd(configmap("a", data={"x": "${b.x}"})),
        rgd(configmap("a", readyWhen=["${schema.spec.enabled}"])),
        rgd(status={"a": "b"}),
    ):
        err = build_error(obj)
        assert isinstance(err, BuildError)
        assert err.rgd == "test-rgd"


def test_graph_nodes_keep_a_copy_of_the_template_as_written() -> None:
    obj = rgd(configmap("cm", data={"a": "${schema.spec.name}", "b": "literal"}))
    graph = build(obj)
    template = obj["spec"]["resources"][0]["template"]
    assert graph.nodes["cm"].template == template
    template["data"]["b"] = "changed later by the caller"
    assert graph.nodes["cm"].template["data"]["b"] == "literal"
