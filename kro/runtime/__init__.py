"""kro.runtime: a controller-runtime-style library for asyncio, with no knowledge of kro.

Lives here: the thin aiohttp + orjson REST client (plain dicts in and out), discovery and the
REST mapper, list+watch informers and their stores, rate-limited work queues, controllers with
N workers, the manager (leader election, health, metrics, graceful shutdown), the event recorder.

Must not import: any other `kro.*` package, the CEL engine, pydantic models of kro's API.
An operator author can build a controller with this package alone (see docs/runtime.md).

Entry points, in the order an operator meets them: `Client.from_kubeconfig` (talk to the API
server), `Informer` (a watched cache), `WorkQueue` + `Controller` (reconcile keys with N
workers), `Manager` (run it all with probes, metrics, leader election and a graceful stop).
Everything a caller catches is in `errors` (one tree under `errors.KubeError`).

    async with await Client.from_kubeconfig() as client:
        informer = Informer(client, GVR("", "v1", "configmaps"), namespace="default")
        queue: WorkQueue[Request] = WorkQueue("configmaps")
        informer.add_handler(MyHandler(queue))            # on_add/on_update/on_delete -> queue.add
        manager = Manager(ManagerOptions(handle_signals=True))
        manager.add_informer(informer)
        manager.add_controller(Controller("configmaps", MyReconciler(informer), queue))
        await manager.run()                               # until SIGTERM

The names below are the public API; submodules stay importable for the rest
(`kro.runtime.store.object_key`, `kro.runtime.discovery.ResourceInfo`, ...).
"""

from . import errors as errors
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
from .gvk import GVK as GVK
from .gvk import GVR as GVR
from .informer import EventHandler as EventHandler
from .informer import Informer as Informer
from .informer import strip_managed_fields as strip_managed_fields
from .informerfactory import SharedInformerFactory as SharedInformerFactory
from .leaderelection import LeaderElectionConfig as LeaderElectionConfig
from .leaderelection import LeaderElector as LeaderElector
from .logging import configure as configure_logging
from .manager import GcTuning as GcTuning
from .manager import Manager as Manager
from .manager import ManagerOptions as ManagerOptions
from .metrics import MetricsProvider as MetricsProvider
from .prometheus import PrometheusProvider as PrometheusProvider
from .ratelimit import ItemExponentialBackoff as ItemExponentialBackoff
from .ratelimit import MaxOf as MaxOf
from .ratelimit import RateLimiter as RateLimiter
from .ratelimit import TokenBucket as TokenBucket
from .ratelimit import default_controller_rate_limiter as default_controller_rate_limiter
from .reconcile import ObjectKey as ObjectKey
from .reconcile import Reconciler as Reconciler
from .reconcile import Request as Request
from .reconcile import Result as Result
from .reconcile import TerminalError as TerminalError
from .store import Store as Store
from .workqueue import QueueShutDown as QueueShutDown
from .workqueue import WorkQueue as WorkQueue

__all__ = [
    "GVK",
    "GVR",
    "Client",
    "ClientOptions",
    "Clock",
    "ConnectionConfig",
    "Controller",
    "EventHandler",
    "EventRecorder",
    "EventRecorderOptions",
    "FakeClock",
    "GcTuning",
    "Informer",
    "ItemExponentialBackoff",
    "LeaderElectionConfig",
    "LeaderElector",
    "Manager",
    "ManagerOptions",
    "MaxOf",
    "MetricsProvider",
    "ObjectKey",
    "PrometheusProvider",
    "QueueShutDown",
    "RESTMapper",
    "RateLimiter",
    "RealClock",
    "Reconciler",
    "Request",
    "Result",
    "SharedInformerFactory",
    "Store",
    "TerminalError",
    "TokenBucket",
    "WatchEvent",
    "WorkQueue",
    "configure_logging",
    "default_controller_rate_limiter",
    "errors",
    "strip_managed_fields",
]
