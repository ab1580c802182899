"""kro.api.crds: the manifests of kro's own CRDs, loaded from package data.

`kro/api/crds/*.yaml` is the single place the ResourceGraphDefinition, GraphRevision and Graph
CRDs (with their admission rules: patterns, immutability, exactly-one-of) are written down. The Helm
chart copies these files, the local control plane installs them, and tests check that the
pydantic models in `kro.api.v1alpha1` agree with them. Every call returns a fresh deep copy so
callers may modify the result.

The Graph CRD is installed with the others whatever the `GraphKind` gate says: installing it is
harmless, and only the gate decides whether anything watches Graphs (kro.api.graph).
"""

from __future__ import annotations

import copy
from functools import cache
from importlib import resources
from typing import Any, Final

RGD_CRD_FILE: Final = "kro.run_resourcegraphdefinitions.yaml"
GRAPH_REVISION_CRD_FILE: Final = "internal.kro.run_graphrevisions.yaml"
GRAPH_CRD_FILE: Final = "kro.run_graphs.yaml"
CRD_FILES: Final = (RGD_CRD_FILE, GRAPH_REVISION_CRD_FILE, GRAPH_CRD_FILE)
"""In install order; file names follow controller-gen's `<group>_<plural>.yaml` convention."""


@cache
def _load(file_name: str) -> dict[str, Any]:
    import yaml  # only when a CRD is read: importing kro.api stays light

    text = resources.files("kro.api").joinpath("crds", file_name).read_text(encoding="utf-8")
    loaded = yaml.safe_load(text)
    if not isinstance(loaded, dict):
        raise ValueError(f"{file_name}: expected one CustomResourceDefinition document")
    return loaded


def crd_manifest_text(file_name: str) -> str:
    """The YAML text as shipped (comments included), e.g. for the Helm chart's `crds/`."""
    if file_name not in CRD_FILES:
        raise KeyError(file_name)
    return resources.files("kro.api").joinpath("crds", file_name).read_text(encoding="utf-8")


def resource_graph_definition_crd() -> dict[str, Any]:
    """The `resourcegraphdefinitions.kro.run` CRD."""
    return copy.deepcopy(_load(RGD_CRD_FILE))


def graph_revision_crd() -> dict[str, Any]:
    """The `graphrevisions.internal.kro.run` CRD."""
    return copy.deepcopy(_load(GRAPH_REVISION_CRD_FILE))


def crd_from_file(file_name: str) -> dict[str, Any]:
    """One of `CRD_FILES`, parsed (kro.api.graph's `graph_crd()` reads its CRD this way)."""
    if file_name not in CRD_FILES:
        raise KeyError(file_name)
    return copy.deepcopy(_load(file_name))


def kro_crds() -> list[dict[str, Any]]:
    """Every CRD of kro's own API, in install order."""
    return [copy.deepcopy(_load(name)) for name in CRD_FILES]


def crd_by_name(name: str) -> dict[str, Any]:
    """One of kro's CRDs by its object name (`resourcegraphdefinitions.kro.run`, ...)."""
    for file_name in CRD_FILES:
        if _load(file_name)["metadata"]["name"] == name:
            return copy.deepcopy(_load(file_name))
    raise KeyError(name)
