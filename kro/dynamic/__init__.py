"""kro.dynamic: the generic dynamic micro-controller manager.

Registers and deregisters GVR watches and event handlers on one shared queue at runtime. kro's
child and external-reference routing is passed in as map functions; this package never reads a
kro label itself. Must not import: kro.api, kro.cel, kro.graph, kro.applyset, kro.controllers.

Lives here (reference §1.P, W-01..W-10):

* `DynamicController` (controller.py): one process-wide controller; `register(gvr, handler)` /
  `deregister(gvr)` parent kinds at runtime; one rate-limited queue `dynamic-controller-queue`
  of `ObjectRef(gvr, namespace, name)` items; N workers; upstream's result handling and metrics.
* `WatchCoordinator` (watches.py, reached as `controller.watches`): the per-parent child and
  external watches a handler declares each reconcile (`ScalarWatch`, `SelectorWatch`), committed
  or rolled back with `done`, and the routing of every event of a watched kind to its parents;
  `health(parent)` (a `WatchHealth`) says which watched kinds kro may not list or watch
  (`WatchForbidden` is what registering such a parent kind raises) or has not listed yet.
* `LabelSelector` (selector.py): Kubernetes label selectors, parsed once, matched per event.

Informers (metadata-only, one per GVR, shared by parents and children) are acquired from and
released to the process's one informer registry, kro.runtime's InformerCache (a Manager's
`cache`), which the caller owns and runs.

    cache = InformerCache(client, resync_period_s=36000)   # or manager.cache
    dynamic = DynamicController(cache, options=DynamicControllerOptions(workers=4))

    async def reconcile(request: Request) -> Result:
        parent = ObjectRef(WIDGETS, request.namespace, request.name)
        await dynamic.watches.watch(parent, ScalarWatch("cm", CONFIGMAPS, request.namespace, "x"))
        await dynamic.watches.done(parent, commit=True)
        return Result()

    await dynamic.register(WIDGETS, reconcile)
    async with asyncio.TaskGroup() as tg:
        tg.create_task(cache.run())
        tg.create_task(dynamic.run())
"""

from kro.dynamic.controller import DynamicController as DynamicController
from kro.dynamic.controller import DynamicControllerOptions as DynamicControllerOptions
from kro.dynamic.controller import Handler as Handler
from kro.dynamic.controller import UpdatePredicate as UpdatePredicate
from kro.dynamic.controller import generation_changed as generation_changed
from kro.dynamic.errors import DynamicError as DynamicError
from kro.dynamic.errors import InformerSyncTimeout as InformerSyncTimeout
from kro.dynamic.errors import SelectorError as SelectorError
from kro.dynamic.errors import WatchForbidden as WatchForbidden
from kro.dynamic.errors import resource_name as resource_name
from kro.dynamic.selector import LabelSelector as LabelSelector
from kro.dynamic.selector import Requirement as Requirement
from kro.dynamic.watches import ScalarWatch as ScalarWatch
from kro.dynamic.watches import SelectorWatch as SelectorWatch
from kro.dynamic.watches import WatchCoordinator as WatchCoordinator
from kro.dynamic.watches import WatchHealth as WatchHealth
from kro.dynamic.watches import WatchRequest as WatchRequest
from kro.runtime.objectref import ObjectRef as ObjectRef

__all__ = [
    "DynamicController",
    "DynamicControllerOptions",
    "DynamicError",
    "Handler",
    "InformerSyncTimeout",
    "LabelSelector",
    "ObjectRef",
    "Requirement",
    "ScalarWatch",
    "SelectorError",
    "SelectorWatch",
    "UpdatePredicate",
    "WatchCoordinator",
    "WatchForbidden",
    "WatchHealth",
    "WatchRequest",
    "generation_changed",
    "resource_name",
]
