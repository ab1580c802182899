"""kro.api: kro's API types and every label, annotation, finalizer, field manager and condition
name, each defined once.

Must not import: kro.runtime's network code, aiohttp, kubernetes_asyncio, prometheus_client.
Pure data: pydantic models for user input, TypedDict views, constants.

Entry points:

* `names` — the wire names (`names.LABEL_OWNED`, `names.CONDITION_READY`, `names.FINALIZER`, ...).
* `parse_resource_graph_definition` / `parse_graph_revision` — validate untrusted manifests as
  admission would, raising `InvalidObjectError`.
* `conditions` — set/get/aggregate conditions on a status dict, by type name.
* `kro_crds()` — the CRD manifests of kro's own API (package data `kro/api/crds/`); the Graph
  API's names and CRD are in `kro.api.graph`.

    from kro.api import conditions, names, parse_resource_graph_definition

    rgd = parse_resource_graph_definition(yaml.safe_load(text))
    conditions.set_condition(status, names.CONDITION_GRAPH_ACCEPTED, names.STATUS_TRUE,
                             reason=names.REASON_VALID, now="2026-01-01T00:00:00Z")

Each name is imported when first used (kro._lazy): `kro.api.names` alone loads no pydantic.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kro.api import conditions as conditions
    from kro.api import names as names
    from kro.api.conditions import Condition as Condition
    from kro.api.crds import graph_revision_crd as graph_revision_crd
    from kro.api.crds import kro_crds as kro_crds
    from kro.api.crds import resource_graph_definition_crd as resource_graph_definition_crd
    from kro.api.graphrevision import GraphRevision as GraphRevision
    from kro.api.graphrevision import GraphRevisionSnapshot as GraphRevisionSnapshot
    from kro.api.graphrevision import GraphRevisionSpec as GraphRevisionSpec
    from kro.api.graphrevision import GraphRevisionStatus as GraphRevisionStatus
    from kro.api.graphrevision import parse_graph_revision as parse_graph_revision
    from kro.api.v1alpha1 import CustomResourceColumnDefinition as CustomResourceColumnDefinition
    from kro.api.v1alpha1 import ExternalRef as ExternalRef
    from kro.api.v1alpha1 import InvalidObjectError as InvalidObjectError
    from kro.api.v1alpha1 import Resource as Resource
    from kro.api.v1alpha1 import ResourceGraphDefinition as ResourceGraphDefinition
    from kro.api.v1alpha1 import ResourceGraphDefinitionSpec as ResourceGraphDefinitionSpec
    from kro.api.v1alpha1 import ResourceGraphDefinitionStatus as ResourceGraphDefinitionStatus
    from kro.api.v1alpha1 import RGDSpecView as RGDSpecView
    from kro.api.v1alpha1 import RGDStatusView as RGDStatusView
    from kro.api.v1alpha1 import Schema as Schema
    from kro.api.v1alpha1 import parse_resource_graph_definition as parse_resource_graph_definition
else:
    from kro._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            ".": ("conditions", "names"),
            ".conditions": ("Condition",),
            ".crds": ("graph_revision_crd", "kro_crds", "resource_graph_definition_crd"),
            ".graphrevision": (
                "GraphRevision",
                "GraphRevisionSnapshot",
                "GraphRevisionSpec",
                "GraphRevisionStatus",
                "parse_graph_revision",
            ),
            ".v1alpha1": (
                "CustomResourceColumnDefinition",
                "ExternalRef",
                "InvalidObjectError",
                "Resource",
                "ResourceGraphDefinition",
                "ResourceGraphDefinitionSpec",
                "ResourceGraphDefinitionStatus",
                "RGDSpecView",
                "RGDStatusView",
                "Schema",
                "parse_resource_graph_definition",
            ),
        },
    )

__all__ = [
    "Condition",
    "CustomResourceColumnDefinition",
    "ExternalRef",
    "GraphRevision",
    "GraphRevisionSnapshot",
    "GraphRevisionSpec",
    "GraphRevisionStatus",
    "InvalidObjectError",
    "RGDSpecView",
    "RGDStatusView",
    "Resource",
    "ResourceGraphDefinition",
    "ResourceGraphDefinitionSpec",
    "ResourceGraphDefinitionStatus",
    "Schema",
    "conditions",
    "graph_revision_crd",
    "kro_crds",
    "names",
    "parse_graph_revision",
    "parse_resource_graph_definition",
    "resource_graph_definition_crd",
]
