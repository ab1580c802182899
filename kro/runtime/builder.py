"""kro.runtime.builder: a controller in one statement (controller-runtime's builder).

Wiring a controller by hand takes an informer per kind, a handler per informer, a named queue
with a rate limiter and a Controller registered with the manager, and the easy mistakes are in
the wiring (a second informer for a kind already watched, a child change that never reaches its
owner). The builder does that wiring from a declaration of what the controller is for:

    ControllerBuilder(manager)
        .for_(Website, predicates=generation_changed())     # the primary kind
        .owns(DEPLOYMENTS)                                  # children: queue their controller owner
        .watches(SECRETS, secret_to_websites)               # anything else, through a map function
        .with_predicates(has_labels("tier!=test"))          # applied to every event source
        .in_namespace("prod")                               # every informer of this controller
        .named("website")                                   # in logs and metrics
        .workers(4)
        .rate_limit(base_delay_s=0.1, max_delay_s=300)
        .build(reconciler)                                  # or .reconcile_objects(async fn)

Informers come from the manager's shared cache (`manager.cache`), so controllers that watch the
same kind share one watch and one copy of each object, and the manager waits for them all to
sync before any controller starts. Build controllers before `manager.run()`; a kind first asked
for while the manager runs is watched at once, but controllers only start with the manager.
`watches(..., metadata_only=True)` watches a kind for its metadata alone (controller-runtime's
OnlyMetadata), when the map function needs no more: a fraction of the memory and bandwidth.

A controller runs only while its replica leads (the manager's leader election), unless built
with `leader_only(False)`: replicas that share the work run it everywhere and ask
`manager.may_reconcile()` before a write only the leader may make.

Kinds may be a GVR, a kind's name (`"ConfigMap"`, `"Deployment.apps"`, resolved through
discovery: the plural is looked up, never typed) or a typed model class (kro.runtime.typed), for
which `reconcile_objects` hands the reconciler validated models. A kind that discovery must
resolve is wired when the manager starts (`Manager.add_prestart`), after discovery is read.

A failed reconcile posts a Warning Event on its object (reason `ReconcileFailed`), through the
recorder the manager names after the controller, folded and rate limited like client-go's;
`failure_events(False)` turns that off (kro.runtime.failureevents).

`finalize(name, cleanup, needed=...)` puts a finalizer on every primary the reconciler sees and
runs `cleanup(obj)` once before the object goes (deleted, or no longer `needed`), then releases
it; the reconciler itself only sees live objects that need it (kro.runtime.finalizers).

`validate(fn)`, `default(fn)` and `convert(fn)` register webhooks for the primary kind with the
manager's webhook server at once (they need no reconciler, so a builder used only for them is
never built): admission handlers of kro.runtime.admission, a conversion handler of
kro.runtime.conversion for the kind's CRD.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, Self, TypeVar, cast, overload

from .adapters import FunctionReconciler, ObjectFn, ObjectReconciler, ReconcileFn
from .cache import InformerCache
from .clock import Clock
from .controller import Controller
from .errors import NoKindMatch
from .events import Recorder
from .failureevents import FailureEvents, cached_object
from .finalizers import Cleanup, Finalizer, Needed
from .gvk import GVK, GVR
from .handlers import EnqueueForObject, EnqueueForOwner, EnqueueFromMap, MapFunc
from .managerclient import ManagerClient
from .metrics import MetricsProvider
from .predicates import Predicate, and_
from .ratelimit import ItemExponentialBackoff, MaxOf, RateLimiter, TokenBucket
from .reader import CachedReader, Kind, gvr_of, resolve_gvr
from .reconcile import Reconciler, Request
from .workqueue import WorkQueue

if TYPE_CHECKING:  # typed models are pydantic (8 MiB): loaded by the code that defines one
    from .admission import AdmissionRequest, Operation
    from .conversion import Converter
    from .typed import KubeModel
    from .webhook_server import WebhookServer

__all__ = ["SAME_NAMESPACE", "ControllerBuilder", "ControllerHost"]

ObjT = TypeVar("ObjT")
M = TypeVar("M", bound="KubeModel")
Predicates = Predicate | Sequence[Predicate]


class _Namespace(enum.Enum):
    SAME = "same"


SAME_NAMESPACE: Literal[_Namespace.SAME] = _Namespace.SAME
"""`watches(..., namespace=SAME_NAMESPACE)`: the builder's namespace (the default)."""


class _HostOptions(Protocol):
    @property
    def namespace(self) -> str | None: ...


class ControllerHost(Protocol):
    """What a builder needs of the manager its controller joins (a kro.runtime.manager.Manager).

    Described by shape rather than imported: `Manager.controller()` starts a builder, so the
    manager imports this module, and this module must not import the manager back.
    """

    @property
    def options(self) -> _HostOptions: ...

    @property
    def cache(self) -> InformerCache: ...

    @property
    def reader(self) -> CachedReader: ...

    @property
    def client(self) -> ManagerClient: ...

    @property
    def metrics(self) -> MetricsProvider: ...

    def add_prestart(self, hook: Callable[[], Coroutine[Any, Any, None]]) -> None: ...

    def add_controller(
        self, controller: Controller[Request], *, leader_only: bool = True
    ) -> None: ...

    def event_recorder(self, name: str) -> Recorder: ...  # events: failure Warnings


def _as_list(predicates: Predicates) -> list[Predicate]:
    return [predicates] if isinstance(predicates, Predicate) else list(predicates)


@dataclass(slots=True)
class _Source:
    kind: Kind
    predicates: list[Predicate] = field(default_factory=list)
    map_fn: MapFunc | None = None
    only_controller: bool = True
    namespace: str | Literal[_Namespace.SAME] | None = SAME_NAMESPACE
    label_selector: str | None = None
    metadata_only: bool = False


class ControllerBuilder(Generic[ObjT]):
    """Declares one controller and registers it with `manager` on `build` (module docstring).

    ObjT is what `reconcile_objects` hands the reconciler: a dict for a GVR, the model for a
    typed kind.
    """

    def __init__(
        self, manager: ControllerHost, *, name: str | None = None, clock: Clock | None = None
    ) -> None:
        self._manager = manager
        self._name = name
        self._clock = clock
        self._primary: _Source | None = None
        self._owned: list[_Source] = []
        self._watched: list[_Source] = []
        self._predicates: list[Predicate] = []
        self._namespace: str | None = manager.options.namespace
        self._finalizer: tuple[str, Cleanup[Any], Needed[Any] | None] | None = None
        self._reconciler: ObjectReconciler[Any] | None = None
        self._label_selector: str | None = None
        self._field_selector: str | None = None
        self._workers = 1
        self._limiter: RateLimiter[Request] | None = None
        self._max_retries: int | None = None
        self._leader_only = True
        self._built = False

    # -- what the controller is for -------------------------------------------------------------

    @overload
    def for_(self, kind: type[M], *, predicates: Predicates = ()) -> ControllerBuilder[M]: ...

    @overload
    def for_(
        self, kind: GVR | GVK | str, *, predicates: Predicates = ()
    ) -> ControllerBuilder[dict[str, Any]]: ...

    def for_(self, kind: Kind, *, predicates: Predicates = ()) -> ControllerBuilder[Any]:
        """The primary kind: its objects are what requests name. Exactly one per controller."""
        if self._primary is not None:
            raise ValueError("for_() was already called: a controller has one primary kind")
        self._primary = _Source(kind, _as_list(predicates))
        return self

    def owns(
        self, kind: Kind, *, predicates: Predicates = (), only_controller: bool = True
    ) -> Self:
        """A kind this controller creates: a change to one queues its owner among the primaries
        (its controller owner, or any owner with `only_controller=False`)."""
        self._owned.append(_Source(kind, _as_list(predicates), only_controller=only_controller))
        return self

    def watches(
        self,
        kind: Kind,
        map_fn: MapFunc,
        *,
        predicates: Predicates = (),
        namespace: str | Literal[_Namespace.SAME] | None = SAME_NAMESPACE,
        label_selector: str | None = None,
        metadata_only: bool = False,
    ) -> Self:
        """Any other kind: a change to one queues the requests `map_fn(obj)` returns (none,
        one or several).

        namespace: where to watch it (None: all namespaces); by default the builder's.
        label_selector: watch only matching objects (filtered by the server).
        metadata_only: cache only the objects' metadata; `map_fn` and the predicates see
            apiVersion, kind and metadata, nothing else.
        """
        self._watched.append(
            _Source(
                kind,
                _as_list(predicates),
                map_fn=map_fn,
                namespace=namespace,
                label_selector=label_selector,
                metadata_only=metadata_only,
            )
        )
        return self

    # -- filters and options --------------------------------------------------------------------

    def with_predicates(self, *predicates: Predicate) -> Self:
        """Predicates for every event source of this controller (controller-runtime's
        WithEventFilter), on top of each source's own."""
        self._predicates.extend(predicates)
        return self

    def with_selector(self, label: str | None = None, field: str | None = None) -> Self:
        """Watch only primaries matching these selectors, filtered by the API server, so the
        others cost neither memory nor events."""
        self._label_selector = label
        self._field_selector = field
        return self

    def finalize(
        self, name: str, cleanup: Cleanup[ObjT], *, needed: Needed[ObjT] | None = None
    ) -> Self:
        """Hold every primary with finalizer `name` until `cleanup(obj)` has run once: on
        deletion, or as soon as `needed(obj)` is false (the object no longer asks for what
        cleanup undoes). The reconciler of `reconcile_objects` sees only live, needed objects."""
        self._finalizer = (name, cleanup, needed)
        return self

    def in_namespace(self, namespace: str | None) -> Self:
        """Watch one namespace (None: all; default: the manager's `namespace` option)."""
        self._namespace = namespace
        return self

    def named(self, name: str) -> Self:
        """The controller's name in logs and metrics (default: the primary resource)."""
        self._name = name
        return self

    def workers(self, count: int) -> Self:
        """Concurrent reconciles (never two for one key)."""
        if count < 1:
            raise ValueError("a controller needs at least one worker")
        self._workers = count
        return self

    def rate_limit(
        self,
        limiter: RateLimiter[Request] | None = None,
        *,
        base_delay_s: float = 0.005,
        max_delay_s: float = 1000.0,
        qps: float = 10.0,
        burst: int = 100,
    ) -> Self:
        """How failed keys are retried: per-key exponential backoff from `base_delay_s` to
        `max_delay_s`, within an overall token bucket (client-go's defaults), or `limiter`."""
        self._limiter = limiter or MaxOf(
            ItemExponentialBackoff[Request](base_s=base_delay_s, cap_s=max_delay_s),
            TokenBucket[Request](qps=qps, burst=burst, clock=self._clock),
        )
        return self

    def leader_only(self, only: bool = True) -> Self:
        """Run only while this replica leads (the default), or on every replica (False,
        controller-runtime's NeedLeaderElection returning false); see Manager.add_controller."""
        self._leader_only = only
        return self

    def max_retries(self, count: int | None) -> Self:
        """Drop a key after this many consecutive failures (None: retry forever, the default)."""
        self._max_retries = count
        return self

    # -- webhooks (kro.runtime.webhook_server) -------------------------------------------------

    def validate(
        self,
        fn: Callable[[AdmissionRequest[ObjT]], Awaitable[None] | None],
        *,
        operations: tuple[Operation, ...] = ("CREATE", "UPDATE"),
    ) -> Self:
        """Validate the primary kind's requests with `fn`: raise `Denied(message)` to refuse
        one (kro.runtime.admission)."""
        self._webhook_server().validator(self._require_primary().kind, fn, operations=operations)
        return self

    def default(
        self,
        fn: Callable[[AdmissionRequest[ObjT]], Awaitable[None] | None],
        *,
        operations: tuple[Operation, ...] = ("CREATE", "UPDATE"),
    ) -> Self:
        """Default (mutate) the primary kind's objects with `fn`, which changes
        `request.object` in place; the API server gets the JSON patch."""
        self._webhook_server().defaulter(self._require_primary().kind, fn, operations=operations)
        return self

    def convert(self, fn: Converter) -> Self:
        """Convert the objects of the primary kind's CRD between its versions with
        `fn(obj, api_version)` (kro.runtime.conversion)."""
        self._webhook_server().converter(self._require_primary().kind, fn)
        return self

    def _webhook_server(self) -> WebhookServer:
        server = getattr(self._manager, "webhooks", None)
        if server is None:
            raise TypeError("webhooks need a kro.runtime Manager (its `webhooks` server)")
        return cast("WebhookServer", server)

    # -- events ---------------------------------------------------------------------------------

    _failure_events = True

    def failure_events(self, enabled: bool = True) -> Self:
        """Post a Warning Event (reason `ReconcileFailed`, the error as message) on the object
        of each failed reconcile, folded and rate limited (the default; kro.runtime.failureevents);
        False: only the controller's log says so."""
        self._failure_events = enabled
        return self

    def _report_failures(self, controller: Controller[Request], name: str) -> None:
        """Give `controller` an observer that records its failures on the objects, through the
        recorder the manager names after it."""
        manager = self._manager
        primary = self._require_primary()
        lookup = cached_object(manager.cache, primary.kind, manager.cache.client.mapper)
        controller.add_observer(FailureEvents(manager.event_recorder(name), lookup))

    # -- building -------------------------------------------------------------------------------

    def reconcile_objects(self, fn: ObjectFn[ObjT]) -> Controller[Request]:
        """Build with a reconciler that is handed the primary object (kro.runtime.adapters)."""
        primary = self._require_primary()
        finalizer = None
        if self._finalizer is not None:
            name, cleanup, needed = self._finalizer
            finalizer = Finalizer(self._manager.client, name, cleanup, needed=needed)
        self._reconciler = ObjectReconciler(
            self._manager.reader, primary.kind, fn, finalizer=finalizer
        )
        return self.build(self._reconciler)

    def build(self, reconciler: Reconciler[Request] | ReconcileFn) -> Controller[Request]:
        """Wire informers, handlers and a queue, register the controller with the manager."""
        if self._built:
            raise ValueError("this builder has already built its controller")
        primary = self._require_primary()
        manager = self._manager
        name = self._name or _kind_name(primary.kind, manager.cache.client.mapper)
        queue: WorkQueue[Request] = WorkQueue(
            name, rate_limiter=self._limiter, clock=self._clock, metrics=manager.metrics
        )
        try:
            self._wire(queue)
        except NoKindMatch:  # not read yet, or read before its CRD was created: read it again

            async def wire_once_discovery_is_read() -> None:
                manager.client.mapper.invalidate()  # what was read lacked a kind: read again
                for source in (primary, *self._owned, *self._watched):
                    await resolve_gvr(source.kind, manager.client.mapper)
                self._wire(queue)

            manager.add_prestart(wire_once_discovery_is_read)
        controller = Controller(
            name,
            _as_reconciler(reconciler),
            queue,
            workers=self._workers,
            max_retries=self._max_retries,
            clock=self._clock,
            metrics=manager.metrics,
        )
        if self._failure_events:  # events: a Warning Event on the object of a failed reconcile
            self._report_failures(controller, name)
        manager.add_controller(controller, leader_only=self._leader_only)
        self._built = True
        return controller

    def _wire(self, queue: WorkQueue[Request]) -> None:
        """Informers and handlers; NoKindMatch (nothing created) while a kind is unknown."""
        primary = self._require_primary()
        cache = self._manager.cache
        mapper = getattr(cache.client, "mapper", None)
        gvr = gvr_of(primary.kind, mapper)
        kinds = [gvr_of(source.kind, mapper) for source in (*self._owned, *self._watched)]
        common = self._predicates
        primaries = cache.informer(
            gvr,
            namespace=self._namespace,
            label_selector=self._label_selector,
            field_selector=self._field_selector,
        )
        primaries.add_handler(EnqueueForObject(queue, and_(*common, *primary.predicates)))
        if self._reconciler is not None:
            self._reconciler.informer = primaries
        owner_kind = _owner_kind(primary.kind, mapper)
        for owned, owned_gvr in zip(self._owned, kinds, strict=False):
            informer = cache.informer(owned_gvr, namespace=self._namespace)
            informer.add_handler(
                EnqueueForOwner(
                    queue,
                    primaries.store,
                    owner_group=gvr.group,
                    owner_kind=owner_kind,
                    only_controller=owned.only_controller,
                    predicate=and_(*common, *owned.predicates),
                )
            )
        for watched, watched_gvr in zip(self._watched, kinds[len(self._owned) :], strict=True):
            assert watched.map_fn is not None
            namespace = (
                self._namespace if watched.namespace is SAME_NAMESPACE else watched.namespace
            )
            informer = cache.informer(
                watched_gvr,
                namespace=namespace,
                label_selector=watched.label_selector,
                metadata_only=watched.metadata_only,
            )
            informer.add_handler(
                EnqueueFromMap(queue, watched.map_fn, and_(*common, *watched.predicates))
            )

    def _require_primary(self) -> _Source:
        if self._primary is None:
            raise ValueError("call for_(kind) first: a controller needs a primary kind")
        return self._primary


def _kind_name(kind: Kind, mapper: Any) -> str:
    """A controller's default name: its primary resource (`deployments.apps`); the kind's name
    when discovery cannot tell yet."""
    try:
        gvr = gvr_of(kind, mapper)
    except NoKindMatch:
        gvk = kind.gvk if isinstance(kind, type) else kind
        if isinstance(gvk, GVK):
            return f"{gvk.kind.lower()}.{gvk.group}" if gvk.group else gvk.kind.lower()
        return str(gvk).lower()
    return f"{gvr.resource}.{gvr.group}" if gvr.group else gvr.resource


def _owner_kind(kind: Kind, mapper: Any) -> str | None:
    """The kind owners must name for children to be mapped to them (a GVR says only the
    group, so any kind of it matches, as before)."""
    if isinstance(kind, GVR):
        return None
    if isinstance(kind, type):
        return kind.gvk.kind
    if isinstance(kind, GVK):
        return kind.kind
    info = mapper.find(kind) if mapper is not None else None
    return info.gvk.kind if info is not None else None


def _as_reconciler(reconciler: Reconciler[Request] | ReconcileFn) -> Reconciler[Request]:
    """A Reconciler as it is, an `async def fn(request)` wrapped."""
    if callable(getattr(reconciler, "reconcile", None)):
        return cast(Reconciler[Request], reconciler)
    return FunctionReconciler(cast(ReconcileFn, reconciler))
