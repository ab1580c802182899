"""kro.controllers.instance: reconcile the instances of an RGD (reference §1.F-§1.L).

`InstanceReconciler` is registered with the dynamic controller for the RGD's generated kind; it
resolves the latest compiled graph from the registry, evaluates it per instance with
`kro.graph.evaluate`, applies children with `kro.applyset`, and writes status. Once the RGD is
deleted, `DrainingReconciler` replaces it until the kind has no instance left: it marks each
instance as no longer reconciled and still serves its deletion.
"""

from kro.controllers.instance.draining import DrainingReconciler as DrainingReconciler
from kro.controllers.instance.reconciler import InstanceOptions as InstanceOptions
from kro.controllers.instance.reconciler import InstanceReconciler as InstanceReconciler
from kro.controllers.instance.reconciler import should_enqueue_update as should_enqueue_update

__all__ = ["DrainingReconciler", "InstanceOptions", "InstanceReconciler", "should_enqueue_update"]
