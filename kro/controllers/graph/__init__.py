"""kro.controllers.graph: the `Graph` controller (kro.run/v1alpha1, alpha, gate `GraphKind`).

A Graph is a set of nodes applied in dependency order as a ServiceAccount of its namespace,
with no schema, no generated CRD and no instances. It runs on the same engine as RGD instances
(kro.engine): this package is its adapter (binding, inventory in status, identity, conditions).
"""

from kro.controllers.graph.inventory import GRAPHS as GRAPHS
from kro.controllers.graph.reconciler import GraphOptions as GraphOptions
from kro.controllers.graph.reconciler import GraphReconciler as GraphReconciler

__all__ = ["GRAPHS", "GraphOptions", "GraphReconciler"]
