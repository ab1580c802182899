"""kro.controllers.instance: reconcile the instances of an RGD (reference §1.F-§1.L).

`InstanceReconciler` is registered with the dynamic controller for the RGD's generated kind; it
resolves the latest compiled graph from the registry, evaluates it per instance with
`kro.graph.evaluate`, applies children with `kro.applyset`, and writes status.
"""

from kro.controllers.instance.reconciler import InstanceOptions as InstanceOptions
from kro.controllers.instance.reconciler import InstanceReconciler as InstanceReconciler
from kro.controllers.instance.reconciler import should_enqueue_update as should_enqueue_update

__all__ = ["InstanceOptions", "InstanceReconciler", "should_enqueue_update"]
