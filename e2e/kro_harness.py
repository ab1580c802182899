"""e2e/kro_harness.py: kro's controller running in-process against the session cluster.

`ControllerThread` runs the whole controller (RGD, GraphRevision and dynamic controllers, probes
and metrics on 127.0.0.1 port 0) on its own event loop in a background thread, built exactly as
`kro controller` builds it (`parse_controller_args(...)` -> `Manager` -> `KroApp(manager, ...)`),
so a test's own event loop never shares a scheduler with the code under test, and a test can
stop and start the controller mid-scenario (`restart`).

`KroEnv` is what one test works with: its own Client, a fresh namespace, an API group and RGD
name suffix nobody else uses (`<namespace>.e2e.kro.run`), builders for RGDs and instances, waits
on conditions with deadlines (never fixed sleeps), and a clean-up that deletes instances first
(so kro removes their children while it still serves the kind) and RGDs second.

Each test module binds its two fixtures with `controller, kro = kro_fixtures()`: a controller
per module (module scope, so modules never overlap) over `running_controller`, and a `KroEnv` per
test over `kro_env`; modules that need other controller flags define their own. Modules that run
`kro controller` as child processes (replicas, leadership, sharding) bind `spawn, kro =
process_fixtures(...)` instead. Fixtures are never imported from a conftest, and helper modules
have names unique across test folders.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import logging
import threading
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
import structlog
import yaml

from kro.cli.controller import app_options, resync_period
from kro.cli.flags import parse_controller_args
from kro.controllers.app import KroApp
from kro.controllers.crd import CRDS
from kro.controllers.graphrevision import GRAPH_REVISIONS
from kro.controllers.rgd import RGDS
from kro.runtime.client import Client
from kro.runtime.errors import KubeError, NotFound
from kro.runtime.gvk import GVK, GVR
from kro.runtime.logging import configure
from kro.runtime.manager import Manager, ManagerOptions
from kro.runtime.prometheus import PrometheusProvider
from kro.testing.crds import install_crds
from kro.testing.kroprocess import FAST_LEASE_ARGS, KroProcess
from kro.testing.pytest_plugin import ClusterHandle
from kro.testing.waiting import eventually

T = TypeVar("T")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
FIELD_MANAGER = "kro-e2e"
VERSION = "v1alpha1"
DEADLINE_S = 60.0
POLL_S = 0.2

CONFIGMAPS = GVR("", "v1", "configmaps")
SERVICES = GVR("", "v1", "services")
DEPLOYMENTS = GVR("apps", "v1", "deployments")
NAMESPACES = GVR("", "v1", "namespaces")

CONTROLLER_ARGS = (
    "--metrics-bind-address=127.0.0.1:0",
    "--health-probe-bind-address=127.0.0.1:0",
    "--instance-requeue-interval=1s",
    "--rgd-progress-requeue-delay=1s",
    "--dynamic-controller-concurrent-reconciles=4",
    "--allow-crd-deletion=true",
    "--graceful-shutdown-timeout=10s",
    "--feature-gates=InstanceConditionEvents=true",
    "--log-level=info",
)


class ControllerThread:
    """The kro controller on a private event loop in a daemon thread; start, stop, restart."""

    def __init__(self, kubeconfig: Path, args: Sequence[str] = CONTROLLER_ARGS) -> None:
        self.kubeconfig = kubeconfig
        self.args = [*args, f"--kubeconfig={kubeconfig}"]
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._manager: Manager | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.metrics_address = ""
        self.app: KroApp | None = None

    def start(self, timeout_s: float = DEADLINE_S) -> None:
        self._ready.clear()
        self._error = None
        self._thread = threading.Thread(target=self._main, name="kro-controller", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout_s):
            raise TimeoutError(f"the kro controller did not start within {timeout_s}s")
        if self._error is not None:
            raise RuntimeError("the kro controller failed to start") from self._error

    def stop(self, timeout_s: float = 30.0) -> None:
        loop, manager, thread = self._loop, self._manager, self._thread
        if loop is None or manager is None or thread is None:
            return
        with contextlib.suppress(RuntimeError):  # loop already closed
            loop.call_soon_threadsafe(manager.stop)
        thread.join(timeout_s)
        if thread.is_alive():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(manager.stop)  # the second stop cancels outright
            thread.join(timeout_s)
        if thread.is_alive():
            raise TimeoutError("the kro controller did not stop")
        self._thread = self._loop = self._manager = None
        if self._error is not None:
            raise RuntimeError("the kro controller crashed") from self._error

    def restart(self) -> None:
        self.stop()
        self.start()

    def scrape(self) -> str:
        """The controller's /metrics page."""
        url = f"http://{self.metrics_address}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            return str(response.read().decode())

    def _main(self) -> None:
        try:
            asyncio.run(self._run())
        except BaseException as error:  # reported to the test thread
            self._error = error
        finally:
            self._ready.set()

    async def _run(self) -> None:
        config = parse_controller_args(self.args)
        configure("console", config.log_level)
        metrics = PrometheusProvider()
        client = await Client.from_kubeconfig(str(self.kubeconfig))
        try:
            await install_crds(client)
            manager = Manager(
                ManagerOptions(
                    health_probe_bind_address=config.health_probe_bind_address,
                    metrics_bind_address=config.metrics_bind_address,
                    graceful_shutdown_timeout_s=config.graceful_shutdown_timeout_s,
                    handle_signals=False,
                    gc_tuning=None,
                    resync_period_s=resync_period(config),
                ),
                client=client,
                metrics=metrics,
            )
            self.app = KroApp(manager, app_options(config), metrics=metrics)
            self._manager = manager
            self._loop = asyncio.get_running_loop()
            task = asyncio.create_task(manager.run(), name="kro-e2e-manager")
            await manager.wait_for_serving()
            host, port = manager.addresses[0]
            self.metrics_address = f"{host}:{port}"

            async def ready() -> bool:
                if task.done():
                    task.result()  # the manager failed: say why
                return manager.is_ready()

            await eventually(ready, what="the controller's caches synced", timeout_s=DEADLINE_S)
            self._ready.set()
            await task
        finally:
            await client.close()


def settings_resource(key: str) -> dict[str, Any]:
    """An RGD resource `settings`: a ConfigMap `<instance>-settings` whose data key is `key`
    (a key with a space, `bad key`, is one the API server refuses with 422)."""
    return {
        "id": "settings",
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "${schema.metadata.name}-settings"},
            "data": {key: "${schema.spec.value}"},
        },
    }


class RenderedLines(logging.Handler):
    """Every log line of an in-process controller exactly as it renders it (its own
    formatter, what reaches its stderr): what a leak check must read. See `rendered_lines`."""

    def __init__(self, formatter: logging.Formatter) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(formatter)
        self._lines: list[str] = []
        self._guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        line = self.format(record)
        with self._guard:
            self._lines.append(line)

    @property
    def lines(self) -> list[str]:
        with self._guard:
            return list(self._lines)

    def mentioning(self, *words: str) -> list[str]:
        return [line for line in self.lines if any(w in line for w in words)]


@contextlib.contextmanager
def rendered_lines() -> Iterator[RenderedLines]:
    """Capture the in-process controller's rendered lines while the block runs (it must have
    configured its logging: pytest adds handlers of its own to the root, not this formatter)."""
    root = logging.getLogger()
    formatters = [
        h.formatter
        for h in root.handlers
        if isinstance(h.formatter, structlog.stdlib.ProcessorFormatter)
    ]
    assert formatters, "the controller did not configure its logging"
    handler = RenderedLines(formatters[0])
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


class LogRecords(logging.Handler):
    """The event dicts of every structlog line of an in-process controller, as they reach the
    standard library (kro.runtime.logging renders through it), each with the time it was
    logged (`created`, seconds since the epoch). Added to the root logger by `log_records`."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.events: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if isinstance(record.msg, dict):
            self.events.append(
                {**record.msg, "level": record.levelname.lower(), "created": record.created}
            )

    def named(self, event: str, **fields: str) -> list[dict[str, Any]]:
        return [
            e
            for e in self.events
            if e.get("event") == event and all(e.get(k) == v for k, v in fields.items())
        ]


@contextlib.contextmanager
def log_records() -> Iterator[LogRecords]:
    handler = LogRecords()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


@contextlib.contextmanager
def running_controller(
    kubeconfig: Path, args: Sequence[str] = CONTROLLER_ARGS
) -> Iterator[ControllerThread]:
    """A started controller, stopped on exit (one per test module)."""
    controller = ControllerThread(kubeconfig, args)
    controller.start()
    try:
        yield controller
    finally:
        controller.stop()


def kro_fixtures(args: Sequence[str] = CONTROLLER_ARGS) -> tuple[Any, Any]:
    """The two fixtures of a test module: `controller` (one per module, started with `args`)
    and `kro` (per test).

    A module binds them by name, `controller, kro = kro_fixtures()`, so that each module gets
    its own controller (modules never overlap) without a conftest that every module imports.
    """

    @pytest.fixture(scope="module")
    def controller(kube_cluster: ClusterHandle) -> Iterator[ControllerThread]:
        with running_controller(kube_cluster.kubeconfig, args) as running:
            yield running

    @pytest.fixture
    async def kro(controller: ControllerThread, kube_namespace: str) -> AsyncIterator[KroEnv]:
        async with kro_env(controller, kube_namespace) as env:
            yield env

    return controller, kro


def process_fixtures(*args: str, env: Mapping[str, str] | None = None) -> tuple[Any, Any]:
    """The fixtures of a module that runs `kro controller` as child processes: `spawn(name)`
    starts one (fast Leases, the test's namespace for its Leases, two workers, then `args`;
    `env` set for it) and stops every one after the test; `kro` is the test's KroEnv with kro's
    CRDs installed and no in-process controller."""

    @pytest.fixture
    def spawn(
        kube_cluster: ClusterHandle,
        kube_namespace: str,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> Iterator[Callable[[str], KroProcess]]:
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        started: list[KroProcess] = []

        def start(name: str) -> KroProcess:
            process = KroProcess(
                kube_cluster.kubeconfig,
                tmp_path / f"{name}.log",
                [
                    *FAST_LEASE_ARGS,
                    f"--leader-election-namespace={kube_namespace}",
                    "--dynamic-controller-concurrent-reconciles=2",
                    *args,
                ],
            ).start()
            started.append(process)
            return process

        try:
            yield start
        finally:
            for process in started:
                process.stop()

    @pytest.fixture
    async def kro(kube_cluster: ClusterHandle, kube_namespace: str) -> AsyncIterator[KroEnv]:
        client = await Client.from_kubeconfig(str(kube_cluster.kubeconfig))
        await install_crds(client)
        try:
            yield KroEnv(client, kube_namespace)
        finally:
            await client.close()

    return spawn, kro


# -- waiting ---------------------------------------------------------------------------------


async def wait_for(
    probe: Callable[[], Awaitable[T | None]],
    *,
    what: str,
    timeout_s: float = DEADLINE_S,
    interval_s: float = POLL_S,
) -> T:
    """Await `probe` until it returns something truthy; fail with `what` after the deadline.

    NotFound counts as "not yet" (objects appear asynchronously).
    """
    return await eventually(probe, what=what, timeout_s=timeout_s, interval_s=interval_s)


def condition(obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The condition of type `kind` on `obj` ({} if absent)."""
    for item in (obj.get("status") or {}).get("conditions") or []:
        if item.get("type") == kind:
            return dict(item)
    return {}


def state(obj: Mapping[str, Any]) -> str:
    return str((obj.get("status") or {}).get("state") or "")


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def load_yaml(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


# -- one test's world ------------------------------------------------------------------------


class KroEnv:
    """A namespace, an API group and RGD names of one test, and the objects it created."""

    def __init__(
        self, client: Client, namespace: str, controller: ControllerThread | None = None
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.controller = controller
        self.group = f"{namespace}.e2e.kro.run"
        self.suffix = namespace.removeprefix("kro-test-")
        self._rgds: list[str] = []
        self._instances: list[tuple[GVR, str, str]] = []
        self._extra: list[tuple[GVR, str, str]] = []

    # -- RGDs --------------------------------------------------------------------------------

    def rgd(
        self,
        name: str,
        kind: str,
        spec: Mapping[str, Any],
        resources: Sequence[Mapping[str, Any]],
        *,
        status: Mapping[str, Any] | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """An RGD in this test's group, named `<name>-<suffix>`."""
        schema: dict[str, Any] = {
            "apiVersion": VERSION,
            "kind": kind,
            "group": self.group,
            "spec": dict(spec),
        }
        if status:
            schema["status"] = dict(status)
        metadata: dict[str, Any] = {"name": self.rgd_name(name)}
        if annotations:
            metadata["annotations"] = dict(annotations)
        return {
            "apiVersion": f"kro.run/{VERSION}",
            "kind": "ResourceGraphDefinition",
            "metadata": metadata,
            "spec": {"schema": schema, "resources": [dict(r) for r in resources]},
        }

    def value_rgd(self, name: str, kind: str) -> dict[str, Any]:
        """One ConfigMap `<instance>-config` per instance carrying `spec.value`: a graph whose
        convergence is easy to read."""
        return self.rgd(
            name,
            kind,
            {"value": "string"},
            [
                {
                    "id": "config",
                    "template": {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "${schema.metadata.name}-config"},
                        "data": {"value": "${schema.spec.value}"},
                    },
                }
            ],
        )

    def rgd_name(self, name: str) -> str:
        return f"{name}-{self.suffix}"

    def adapt(
        self, rgd: Mapping[str, Any], *, groups: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """An example RGD made private to this test: unique name, this test's group.

        `groups` rewrites template apiVersions too (RGD chaining, whose templates name the
        kinds of other RGDs by group).
        """
        out = copy.deepcopy(dict(rgd))
        out["metadata"] = {"name": f"{meta(rgd)['name']}-{self.suffix}"}
        out["spec"]["schema"]["group"] = self.group
        for resource in out["spec"].get("resources") or []:
            template = resource.get("template") or {}
            api_version = str(template.get("apiVersion") or "")
            group, _, version = api_version.rpartition("/")
            if groups and group in groups:
                template["apiVersion"] = f"{groups[group]}/{version}"
        return out

    async def apply_rgd(self, rgd: Mapping[str, Any]) -> dict[str, Any]:
        name = str(meta(rgd)["name"])
        if name not in self._rgds:
            self._rgds.append(name)
        return await self.client.apply(RGDS, rgd, field_manager=FIELD_MANAGER, force=True)

    async def get_rgd(self, name: str) -> dict[str, Any]:
        return await self.client.get(RGDS, name)

    async def wait_rgd_active(self, name: str, *, generation: bool = True) -> dict[str, Any]:
        """The RGD Active at its current generation (Ready observed it)."""

        seen: list[Any] = [None]

        async def probe() -> dict[str, Any] | None:
            live = seen[0] = await self.get_rgd(name)
            ready = condition(live, "Ready")
            current = ready.get("observedGeneration") == meta(live).get("generation")
            ok = state(live) == "Active" and ready.get("status") == "True"
            return live if ok and (current or not generation) else None

        try:
            return await wait_for(probe, what=f"RGD {name} Active")
        except AssertionError as error:
            status = (seen[0] or {}).get("status")
            raise AssertionError(f"{error}; RGD status: {status}") from None

    async def revisions(self, rgd_name: str) -> list[dict[str, Any]]:
        page = await self.client.list(
            GRAPH_REVISIONS, field_selector=f"spec.snapshot.name={rgd_name}"
        )
        items = [i for i in page.get("items") or [] if not meta(i).get("deletionTimestamp")]
        return sorted(items, key=lambda i: int(i["spec"]["revision"]))

    # -- instances ---------------------------------------------------------------------------

    def gvr(self, kind_plural: str, group: str | None = None) -> GVR:
        return GVR(group or self.group, VERSION, kind_plural)

    async def gvr_of(self, kind: str, group: str | None = None) -> GVR:
        gvk = GVK(group or self.group, VERSION, kind)
        try:
            return (await self.client.mapper.resource_for(gvk)).gvr
        except KubeError:
            self.client.mapper.invalidate()
            return (await self.client.mapper.resource_for(gvk)).gvr

    async def apply_instance(
        self,
        kind: str,
        name: str,
        spec: Mapping[str, Any],
        *,
        namespace: str | None = None,
        group: str | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        gvr = await self.gvr_of(kind, group)
        namespace = self.namespace if namespace is None else namespace
        metadata: dict[str, Any] = {"name": name}
        if namespace:
            metadata["namespace"] = namespace
        if annotations:
            metadata["annotations"] = dict(annotations)
        body = {
            "apiVersion": f"{gvr.group}/{VERSION}",
            "kind": kind,
            "metadata": metadata,
            "spec": dict(spec),
        }
        key = (gvr, namespace, name)
        if key not in self._instances:
            self._instances.append(key)
        return await self.client.apply(
            gvr, body, field_manager=FIELD_MANAGER, force=True, namespace=namespace or None
        )

    async def get(self, gvr: GVR, name: str, namespace: str | None = None) -> dict[str, Any]:
        namespace = self.namespace if namespace is None else namespace
        return await self.client.get(gvr, name, namespace=namespace or None)

    async def wait_instance(
        self,
        gvr: GVR,
        name: str,
        predicate: Callable[[dict[str, Any]], bool] | None = None,
        *,
        what: str = "",
        namespace: str | None = None,
        timeout_s: float = DEADLINE_S,
    ) -> dict[str, Any]:
        """The instance once `predicate` holds (default: ACTIVE and Ready at its generation)."""
        check = predicate or is_ready
        seen: list[Any] = [None]

        async def probe() -> dict[str, Any] | None:
            live = seen[0] = await self.get(gvr, name, namespace)
            return live if check(live) else None

        try:
            return await wait_for(
                probe, what=what or f"{gvr.resource} {name} ready", timeout_s=timeout_s
            )
        except AssertionError as error:
            status = (seen[0] or {}).get("status")
            raise AssertionError(f"{error}; instance status: {status}") from None

    async def wait_gone(
        self, gvr: GVR, name: str, namespace: str | None = None, *, timeout_s: float = DEADLINE_S
    ) -> None:
        async def probe() -> bool:
            try:
                await self.get(gvr, name, namespace)
            except NotFound:
                return True
            return False

        await wait_for(probe, what=f"{gvr.resource} {name} gone", timeout_s=timeout_s)

    def track(self, gvr: GVR, name: str, namespace: str = "") -> None:
        """Delete this object at clean-up too (cluster-scoped helpers such as policies)."""
        self._extra.append((gvr, namespace, name))

    async def children(
        self, gvr: GVR, instance_name: str, node_id: str | None = None
    ) -> list[dict[str, Any]]:
        selector = f"kro.run/instance-name={instance_name}"
        if node_id:
            selector += f",kro.run/node-id={node_id}"
        items, _ = await self.client.list_all(gvr, label_selector=selector)
        return [i for i in items if not meta(i).get("deletionTimestamp")]

    # -- clean-up ----------------------------------------------------------------------------

    async def cleanup(self) -> None:
        """Instances first (kro deletes their children), then RGDs (and their CRDs)."""
        for gvr, namespace, name in reversed(self._instances):
            with contextlib.suppress(NotFound):
                await self.client.delete(gvr, name, namespace=namespace or None)
        for gvr, namespace, name in reversed(self._instances):
            with contextlib.suppress(AssertionError):
                await self.wait_gone(gvr, name, namespace, timeout_s=30)
        for gvr, namespace, name in self._extra:
            with contextlib.suppress(NotFound):
                await self.client.delete(gvr, name, namespace=namespace or None)
        for name in self._rgds:
            with contextlib.suppress(NotFound):
                await self.client.delete(RGDS, name)
        for name in self._rgds:
            with contextlib.suppress(AssertionError):
                await wait_for(
                    functools.partial(_absent, self.client, RGDS, name),
                    what=f"RGD {name} gone",
                    timeout_s=30,
                )


async def _absent(client: Client, gvr: GVR, name: str) -> bool:
    try:
        await client.get(gvr, name)
    except NotFound:
        return True
    return False


def is_ready(obj: Mapping[str, Any]) -> bool:
    """ACTIVE with Ready=True observed at the current generation."""
    ready = condition(obj, "Ready")
    return (
        state(obj) == "ACTIVE"
        and ready.get("status") == "True"
        and ready.get("observedGeneration") == meta(obj).get("generation")
    )


@contextlib.asynccontextmanager
async def kro_env(controller: ControllerThread, namespace: str) -> AsyncIterator[KroEnv]:
    client = await Client.from_kubeconfig(str(controller.kubeconfig))
    env = KroEnv(client, namespace, controller)
    try:
        yield env
    finally:
        try:
            await env.cleanup()
        finally:
            await client.close()


@contextlib.asynccontextmanager
async def kro_env_with(
    controller: ControllerThread, namespace: str, args: Sequence[str]
) -> AsyncIterator[KroEnv]:
    """A test's world served by a controller started with other `args` (a gate off, another
    flag): the module's `controller` is paused meanwhile and started again afterwards."""
    controller.stop()
    other = ControllerThread(controller.kubeconfig, args)
    other.start()
    try:
        async with kro_env(other, namespace) as env:
            yield env
    finally:
        other.stop()
        controller.start()


__all__ = [
    "CONFIGMAPS",
    "CRDS",
    "DEPLOYMENTS",
    "EXAMPLES",
    "NAMESPACES",
    "SERVICES",
    "ControllerThread",
    "KroEnv",
    "condition",
    "is_ready",
    "kro_env",
    "kro_env_with",
    "load_yaml",
    "meta",
    "running_controller",
    "settings_resource",
    "state",
    "wait_for",
]
