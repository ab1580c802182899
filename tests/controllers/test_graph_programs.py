"""A Graph's compiled program follows the schemas it was typed against (V-64).

kro keeps one program per Graph and compiles again when the spec changes (a new generation).
When a CRD the program was typed against changes, the program is forgotten too, so the next
reconcile checks the Graph against the schema as the API server now serves it: a field the
Graph reads that the CRD no longer has becomes a compile error rather than a value that never
arrives. A change to any other kind keeps the program.
"""

from __future__ import annotations

import copy
from typing import Any, cast

import pytest

from kro.controllers.graph import GraphOptions, GraphReconciler
from kro.graph.errors import GraphError
from kro.graph.resolver import OfflineSchemaResolver, builtin_bundle
from kro.runtime.client import Client

GROUP = "widgets.example.com"


def _crd(*fields: str) -> dict[str, Any]:
    spec = {"type": "object", "properties": {f: {"type": "string"} for f in fields}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}
                    },
                }
            ],
        },
    }


GRAPH: dict[str, Any] = {
    "apiVersion": "kro.run/v1alpha1",
    "kind": "Graph",
    "metadata": {"name": "copy", "namespace": "team", "uid": "u-1", "generation": 1},
    "spec": {
        "nodes": [
            {
                "id": "source",
                "ref": {
                    "apiVersion": f"{GROUP}/v1",
                    "kind": "Widget",
                    "metadata": {"name": "source"},
                },
            },
            {
                "id": "copy",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "copy"},
                    "data": {"colour": "${source.spec.colour}"},
                },
            },
        ]
    },
}


def _reconciler(resolver: OfflineSchemaResolver) -> GraphReconciler:
    # Compiling touches no API: the client, watches and applier are never used here.
    return GraphReconciler(
        client=cast(Client, None),
        resolver=resolver,
        watches=cast(Any, None),
        applier=cast(Any, None),
        options=GraphOptions(controller_username="system:serviceaccount:kro-system:kro"),
    )


async def test_a_changed_crd_recompiles_the_graphs_typed_against_it() -> None:
    resolver = OfflineSchemaResolver(builtin_bundle(), crds=[_crd("colour")])
    reconciler = _reconciler(resolver)
    graph = copy.deepcopy(GRAPH)
    first = await reconciler._compile(graph)
    assert list(first.topological_order) == ["source", "copy"]

    resolver.add_crd(_crd("shape"))  # the CRD drops `colour`
    assert await reconciler._compile(graph) is first  # same generation, nothing changed yet

    reconciler.programs.kind_changed("other.example.com", "Widget")
    reconciler.programs.kind_changed(GROUP, "Gadget")
    assert await reconciler._compile(graph) is first  # other kinds keep the program

    reconciler.programs.kind_changed(GROUP, "Widget")
    with pytest.raises(GraphError, match="colour"):
        await reconciler._compile(graph)

    resolver.add_crd(_crd("colour", "shape"))
    reconciler.programs.kind_changed(GROUP, "Widget")
    again = await reconciler._compile(graph)
    assert again is not first
    assert list(again.topological_order) == ["source", "copy"]
