"""kro.controllers.instance: reconcile the instances of an RGD (reference §1.F-§1.L).

`InstanceReconciler` is registered with the dynamic controller for the RGD's generated kind; it
resolves the latest compiled graph from the registry, evaluates it per instance with
`kro.graph.evaluate`, applies children with `kro.applyset`, and writes status. Once the RGD is
deleted, a `DrainingReconciler` (.draining) serves the kind until it has no instance left.

Each name is imported when first used (kro._lazy): the modules beside this one (status, labels,
kinds) import without loading the reconciler and, through it, the graph evaluator.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kro.controllers.instance.options import InstanceOptions as InstanceOptions
    from kro.controllers.instance.reconciler import InstanceReconciler as InstanceReconciler
    from kro.controllers.instance.reconciler import should_enqueue_update as should_enqueue_update
else:
    from kro._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            ".options": ("InstanceOptions",),
            ".reconciler": ("InstanceReconciler", "should_enqueue_update"),
        },
    )

__all__ = ["InstanceOptions", "InstanceReconciler", "should_enqueue_update"]
