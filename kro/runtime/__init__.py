"""kro.runtime: a controller-runtime-style library for asyncio, with no knowledge of kro.

Lives here: the thin aiohttp + orjson REST client (plain dicts in and out), discovery and the
REST mapper, list+watch informers and their stores, rate-limited work queues, controllers with
N workers, the manager (leader election, health, metrics, graceful shutdown), the event recorder,
the HTTPS server for admission and conversion webhooks;
and for operator authors: the controller builder, predicates, the shared informer cache and a
reader on it, owner references, finalizers, conditions, status writes that skip no-ops, and
pydantic models for their own kinds.

Must not import: any other `kro.*` package, the CEL engine, pydantic models of kro's API.
An operator author can build a controller with this package alone (see docs/runtime.md).

Entry points, in the order an operator meets them: `run(setup)` (flags, environment, logging,
connection, manager, signals: kro.runtime.runner), `manager.controller()` (a `ControllerBuilder`:
the primary kind, owned and watched kinds, predicates, a finalizer), `manager.client` (cached
reads, direct writes, kinds by name), and underneath, `Client.from_kubeconfig`, `Manager`,
`Informer`, `WorkQueue` and `Controller` for wiring by hand. Everything a caller catches is in
`errors` (one tree under `errors.KubeError`).

    def setup(manager: Manager) -> None:
        async def label(cm: dict) -> None:
            await manager.client.patch(cm, {"metadata": {"labels": {"seen": "yes"}}})

        manager.controller("labeller").for_("ConfigMap").reconcile_objects(label)

    if __name__ == "__main__":
        run(setup)                                    # until SIGTERM

The names below are the public API; submodules stay importable for the rest
(`kro.runtime.store.object_key`, `kro.runtime.discovery.ResourceInfo`, ...). Each is imported
when first used (kro._lazy): `import kro.runtime.gvk` does not load aiohttp or pydantic.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import conditions as conditions
    from . import errors as errors
    from . import owners as owners
    from . import predicates as predicates
    from .adapters import FunctionReconciler as FunctionReconciler
    from .adapters import ObjectReconciler as ObjectReconciler
    from .admission import AdmissionRequest as AdmissionRequest
    from .admission import Denied as Denied
    from .builder import ControllerBuilder as ControllerBuilder
    from .cache import InformerCache as InformerCache
    from .certs import CertDir as CertDir
    from .certs import ServingCertificate as ServingCertificate
    from .client import Client as Client
    from .client import ClientOptions as ClientOptions
    from .client import WatchEvent as WatchEvent
    from .clock import Clock as Clock
    from .clock import FakeClock as FakeClock
    from .clock import RealClock as RealClock
    from .config import ConnectionConfig as ConnectionConfig
    from .controller import Controller as Controller
    from .discovery import RESTMapper as RESTMapper
    from .events import EventRecorder as EventRecorder
    from .events import EventRecorderOptions as EventRecorderOptions
    from .events import NamedRecorder as NamedRecorder
    from .events import Recorder as Recorder
    from .finalizers import Finalizer as Finalizer
    from .finalizers import FinalizerOutcome as FinalizerOutcome
    from .gvk import GVK as GVK
    from .gvk import GVR as GVR
    from .informer import EventHandler as EventHandler
    from .informer import Informer as Informer
    from .informer import strip_managed_fields as strip_managed_fields
    from .leaderelection import LeaderElectionConfig as LeaderElectionConfig
    from .leaderelection import LeaderElector as LeaderElector
    from .logging import configure as configure_logging
    from .manager import GcTuning as GcTuning
    from .manager import Manager as Manager
    from .manager import ManagerOptions as ManagerOptions
    from .managerclient import ManagerClient as ManagerClient
    from .managerclient import Object as Object
    from .metrics import MetricsProvider as MetricsProvider
    from .objectref import ObjectRef as ObjectRef
    from .outcomes import Outcome as Outcome
    from .outcomes import ReconcileObserver as ReconcileObserver
    from .predicates import Predicate as Predicate
    from .prometheus import PrometheusProvider as PrometheusProvider
    from .ratelimit import ItemExponentialBackoff as ItemExponentialBackoff
    from .ratelimit import MaxOf as MaxOf
    from .ratelimit import RateLimiter as RateLimiter
    from .ratelimit import TokenBucket as TokenBucket
    from .ratelimit import default_controller_rate_limiter as default_controller_rate_limiter
    from .reader import CachedReader as CachedReader
    from .reconcile import ObjectKey as ObjectKey
    from .reconcile import Reconciler as Reconciler
    from .reconcile import Request as Request
    from .reconcile import Result as Result
    from .reconcile import TerminalError as TerminalError
    from .runner import RunOptions as RunOptions
    from .runner import run as run
    from .runner import run_manager as run_manager
    from .status import StatusWriter as StatusWriter
    from .store import Store as Store
    from .typed import Condition as Condition
    from .typed import InvalidObject as InvalidObject
    from .typed import KubeModel as KubeModel
    from .typed import ObjectMeta as ObjectMeta
    from .typed import WireModel as WireModel
    from .webhook_server import WebhookOptions as WebhookOptions
    from .webhook_server import WebhookServer as WebhookServer
    from .webhook_server import WebhookService as WebhookService
    from .workqueue import QueueShutDown as QueueShutDown
    from .workqueue import WorkQueue as WorkQueue
else:
    from kro._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            ".": ("conditions", "errors", "owners", "predicates"),
            ".adapters": ("FunctionReconciler", "ObjectReconciler"),
            ".admission": ("AdmissionRequest", "Denied"),
            ".builder": ("ControllerBuilder",),
            ".cache": ("InformerCache",),
            ".certs": ("CertDir", "ServingCertificate"),
            ".client": ("Client", "ClientOptions", "WatchEvent"),
            ".clock": ("Clock", "FakeClock", "RealClock"),
            ".config": ("ConnectionConfig",),
            ".controller": ("Controller",),
            ".discovery": ("RESTMapper",),
            ".events": ("EventRecorder", "EventRecorderOptions", "NamedRecorder", "Recorder"),
            ".finalizers": ("Finalizer", "FinalizerOutcome"),
            ".gvk": ("GVK", "GVR"),
            ".informer": ("EventHandler", "Informer", "strip_managed_fields"),
            ".leaderelection": ("LeaderElectionConfig", "LeaderElector"),
            ".logging": ("configure as configure_logging",),
            ".manager": ("GcTuning", "Manager", "ManagerOptions"),
            ".managerclient": ("ManagerClient", "Object"),
            ".metrics": ("MetricsProvider",),
            ".objectref": ("ObjectRef",),
            ".outcomes": ("Outcome", "ReconcileObserver"),
            ".predicates": ("Predicate",),
            ".prometheus": ("PrometheusProvider",),
            ".ratelimit": (
                "ItemExponentialBackoff",
                "MaxOf",
                "RateLimiter",
                "TokenBucket",
                "default_controller_rate_limiter",
            ),
            ".reader": ("CachedReader",),
            ".reconcile": ("ObjectKey", "Reconciler", "Request", "Result", "TerminalError"),
            ".runner": ("RunOptions", "run", "run_manager"),
            ".status": ("StatusWriter",),
            ".store": ("Store",),
            ".typed": ("Condition", "InvalidObject", "KubeModel", "ObjectMeta", "WireModel"),
            ".webhook_server": ("WebhookOptions", "WebhookServer", "WebhookService"),
            ".workqueue": ("QueueShutDown", "WorkQueue"),
        },
    )

__all__ = [
    "GVK",
    "GVR",
    "AdmissionRequest",
    "CachedReader",
    "CertDir",
    "Client",
    "ClientOptions",
    "Clock",
    "Condition",
    "ConnectionConfig",
    "Controller",
    "ControllerBuilder",
    "Denied",
    "EventHandler",
    "EventRecorder",
    "EventRecorderOptions",
    "FakeClock",
    "Finalizer",
    "FinalizerOutcome",
    "FunctionReconciler",
    "GcTuning",
    "Informer",
    "InformerCache",
    "InvalidObject",
    "ItemExponentialBackoff",
    "KubeModel",
    "LeaderElectionConfig",
    "LeaderElector",
    "Manager",
    "ManagerClient",
    "ManagerOptions",
    "MaxOf",
    "MetricsProvider",
    "NamedRecorder",
    "Object",
    "ObjectKey",
    "ObjectMeta",
    "ObjectReconciler",
    "ObjectRef",
    "Outcome",
    "Predicate",
    "PrometheusProvider",
    "QueueShutDown",
    "RESTMapper",
    "RateLimiter",
    "RealClock",
    "ReconcileObserver",
    "Reconciler",
    "Recorder",
    "Request",
    "Result",
    "RunOptions",
    "ServingCertificate",
    "StatusWriter",
    "Store",
    "TerminalError",
    "TokenBucket",
    "WatchEvent",
    "WebhookOptions",
    "WebhookServer",
    "WebhookService",
    "WireModel",
    "WorkQueue",
    "conditions",
    "configure_logging",
    "default_controller_rate_limiter",
    "errors",
    "owners",
    "predicates",
    "run",
    "run_manager",
    "strip_managed_fields",
]
