"""kro.engine: run a compiled graph of nodes for one owning object.

The engine knows nothing of RGDs: the owner's adapter says how its objects are marked
(`OwnerBinding`) and kept (`Ownership`, with its teardown step); every pass ends with one
result per node, from which whoever runs the engine derives what users see.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kro.engine.graph_pass import GraphPass as GraphPass
    from kro.engine.owner import OwnerBinding as OwnerBinding
    from kro.engine.results import NodeReason as NodeReason
    from kro.engine.results import NodeResult as NodeResult
    from kro.engine.results import PassResult as PassResult
    from kro.engine.watches import NoWatches as NoWatches
else:
    from kro._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            ".graph_pass": ("GraphPass",),
            ".owner": ("OwnerBinding",),
            ".results": ("NodeReason", "NodeResult", "PassResult"),
            ".watches": ("NoWatches",),
        },
    )

__all__ = ["GraphPass", "NoWatches", "NodeReason", "NodeResult", "OwnerBinding", "PassResult"]
