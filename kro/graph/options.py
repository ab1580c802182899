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
    cel_cost_limit: the CEL runtime cost one evaluation of any of the graph's expressions may
        use (V-10, flag `--cel-cost-limit`; 0, the default, means no limit). Exceeding it is
        an evaluation error naming the expression; kro-py's time and memory budgets apply
        regardless (kro.cel.limits).
    deletion_policy: the `DeletionPolicy` feature gate (V-30, default off). Off, a resource
        that sets `deletionPolicy` at all is a build error; on, every template resource gets
        a policy (`Delete` unless it says `Orphaned`) that its applies enforce (V-32).
    deferred_schema_resolution: the `DeferredSchemaResolution` feature gate (default off). On,
        a resource whose literal kind the API server does not serve compiles untyped and waits
        for its kind at apply time, when it is eligible (kro.graph.deferred); off, such a kind
        is a build error, and so is the `optional` field.
    """

    max_collection_size: int = 1000
    max_collection_dimension_size: int = 10
    omit_function: bool = False
    cel_cost_limit: int = 0
    deletion_policy: bool = False
    deferred_schema_resolution: bool = False
    multi_cluster: bool = False
    """The `MultiCluster` gate (M-01): `target` blocks (kro.graph.targets); off, any is a
    build error naming the gate."""
    cluster_secrets_namespace: str = ""
    """The only namespace a target's `kubeconfigSecretNamespace` may name (M-10)."""
