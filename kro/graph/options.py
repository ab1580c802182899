"""kro.graph.options: what a graph build honours, apart from the builder.

The controller and the CLI set these from flags at start-up; importing them from here does not
load the builder, its validators or the CEL engine, which `kro controller` needs only once an
RGD arrives.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True, slots=True)
class BuildOptions:
    """Limits and feature gates the build honours (upstream `Builder` configuration).

    max_collection_size: most items one forEach may expand to (F-03, flag
        `--rgd-max-collection-size`, default 1000); enforced at evaluation, carried on the Graph.
    max_collection_dimension_size: most forEach dimensions per resource (G-03, flag
        `--rgd-max-collection-dimension-size`, default 10); enforced here.
    omit_function: the `CELOmitFunction` feature gate (C-31, default off).
    """

    max_collection_size: int = 1000
    max_collection_dimension_size: int = 10
    omit_function: bool = False
