"""kro rides out control-plane outages without a restart of its own.

Two outages hit kro while it is creating instances' children (mid-reconcile):

* kube-apiserver stopped (SIGTERM) and started again on the same port: every connection breaks,
  every watch ends, the new server's watch cache starts afresh;
* etcd stopped for 20 s and started again: kube-apiserver keeps answering, but nothing can be
  written or read consistently, and its watches fall silent.

Meanwhile a user keeps trying to change one instance and to create another (a deploy pipeline
retrying), and right after the outage changes a third. What must hold, as a user and an
operator see it:

* the controller is the same one throughout (its thread never ended) and /healthz answers 200
  at every probe during the outage;
* no hot loop: the controller's requests during the outage (`rest_client_requests_total` on its
  /metrics) stay far below what a tight retry loop would send;
* the outage is visible while it lasts (the user's writes are refused; the instances caught
  mid-reconcile stay pending, as the API server's cache shows during the etcd outage);
* afterwards every instance, those caught mid-reconcile and those written during and right after
  the outage, reaches ACTIVE at its latest generation with children that match its spec.

kro runs in-process exactly as `kro controller` runs (e2e/inprocess_controller.py), without
leader election: a Lease cannot be renewed while etcd is away, and losing it is fatal by design.
These tests stop control-plane components, so they run on a control plane of their own
(`private_cluster`, no nodes: ConfigMap children need none), never on the session cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import secrets
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from inprocess_controller import InProcessController
from kro_harness import CONFIGMAPS, KroEnv, meta, state, wait_for
from nginxapp_example import install_kro_crds

from kro.runtime.client import Client, ClientOptions
from kro.runtime.errors import KubeError
from kro.runtime.gvk import GVR
from kro.testing.adminapi import AdminApi
from kro.testing.cluster import ClusterOptions, ClusterState, LocalCluster
from kro.testing.pytest_plugin import create_namespace, private_cluster

KIND = "Shelf"
ITEMS = ["x", "y", "z"]
INSTANCES = 10
ETCD_OUTAGE_S = 20.0
HEALTH_EVERY_S = 0.25
RECOVERY_DEADLINE_S = 120.0
# The controller's failed requests (no answer, 429, 5xx) while the control plane is away. kro
# backs off everywhere (failed reconciles through the per-item rate limiter, GETs retried with
# doubling waits, informers with jittered exponential backoff): a kube-apiserver restart costs
# about 4-5 per second here, an etcd outage none (its requests wait on the API server). A tight
# retry loop against a refused connection would send hundreds per second.
MAX_FAILED_PER_OUTAGE_S = 20.0

CONTROLLER_ARGS = (
    "--instance-requeue-interval=1s",
    "--rgd-progress-requeue-delay=1s",
    "--dynamic-controller-concurrent-reconciles=4",
    "--allow-crd-deletion=true",
)
# The user's writes while the control plane is away: fail fast, the user retries.
IMPATIENT = ClientOptions(request_timeout_s=5.0, connect_timeout_s=2.0, max_retries=0)

pytestmark = pytest.mark.timeout(900)  # a control plane of its own, and two outages


@dataclasses.dataclass(frozen=True)
class Outages:
    cluster: LocalCluster
    state: ClusterState
    admin: AdminApi
    controller: InProcessController


@pytest.fixture(scope="module")
def outages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outages]:
    run_dir = tmp_path_factory.mktemp("outage-cluster")
    with private_cluster(run_dir, ClusterOptions(nodes=0)) as (cluster, cluster_state):
        admin = AdminApi.from_kubeconfig(Path(cluster_state.kubeconfig))
        install_kro_crds(admin)
        controller = InProcessController(cluster_state.kubeconfig, CONTROLLER_ARGS).start()
        try:
            yield Outages(cluster, cluster_state, admin, controller)
        finally:
            controller.stop()


@pytest.fixture
async def kro(outages: Outages) -> AsyncIterator[KroEnv]:
    namespace = f"kro-test-{secrets.token_hex(4)}"
    await asyncio.to_thread(create_namespace, outages.admin, namespace)
    client = await Client.from_kubeconfig(outages.state.kubeconfig)
    # KroEnv keeps its controller only for tests to reach; here that is `outages.controller`.
    env = KroEnv(client, namespace, outages.controller)
    try:
        yield env
    finally:
        try:
            await env.cleanup()
        finally:
            await client.close()
            await asyncio.to_thread(outages.admin.delete, f"/api/v1/namespaces/{namespace}")


def configmap(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def serve_shelves(kro: KroEnv) -> GVR:
    """An RGD whose instances own one ConfigMap per item and, one wave later, a summary."""
    rgd = kro.rgd(
        "shelf",
        KIND,
        {"items": "[]string", "label": "string"},
        [
            {
                "id": "entries",
                "forEach": [{"slot": "${schema.spec.items}"}],
                "template": configmap(
                    "${schema.metadata.name}-${slot}",
                    {"item": "${slot}", "label": "${schema.spec.label}"},
                ),
            },
            {
                "id": "summary",
                "template": configmap(
                    "${schema.metadata.name}-summary",
                    {"count": "${string(size(entries))}", "label": "${schema.spec.label}"},
                ),
            },
        ],
    )
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])
    return await kro.gvr_of(KIND)


def spec(label: str) -> dict[str, Any]:
    return {"items": ITEMS, "label": label}


def wanted_children(name: str, label: str) -> dict[str, dict[str, str]]:
    children = {f"{name}-{item}": {"item": item, "label": label} for item in ITEMS}
    children[f"{name}-summary"] = {"count": str(len(ITEMS)), "label": label}
    return children


async def converged(kro: KroEnv, gvr: GVR, name: str, label: str) -> bool:
    """ACTIVE and Ready at the latest generation, with exactly the children its spec asks for."""
    live = await kro.get(gvr, name)
    ready = next(
        (c for c in (live.get("status") or {}).get("conditions") or [] if c["type"] == "Ready"),
        {},
    )
    if not (
        state(live) == "ACTIVE"
        and (live.get("spec") or {}).get("label") == label
        and ready.get("status") == "True"
        and ready.get("observedGeneration") == meta(live).get("generation")
    ):
        return False
    children = await kro.children(CONFIGMAPS, name)
    found = {meta(c)["name"]: c.get("data") or {} for c in children}
    return found == wanted_children(name, label)


class HealthWatch:
    """Probes the controller's /healthz from a thread of its own until stopped."""

    def __init__(self, controller: InProcessController) -> None:
        self._controller = controller
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="e2e.healthz", daemon=True)
        self.answers: list[int | None] = []

    def _run(self) -> None:
        while True:
            self.answers.append(self._controller.healthz())
            if self._stop.wait(HEALTH_EVERY_S):  # probe pacing
                return

    def __enter__(self) -> HealthWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)


def requests_so_far(controller: InProcessController) -> Counter[str]:
    """The controller's requests so far by status code ("<error>": no answer at all)."""
    counts: Counter[str] = Counter()
    for sample in controller.metrics().select("rest_client_requests_total"):
        counts[sample.labels["code"]] += int(sample.value)
    return counts


def failed(counts: Counter[str]) -> int:
    """Requests the control plane could not serve: no answer, 429 or 5xx."""
    return sum(
        n for code, n in counts.items() if not code.isdigit() or code == "429" or code >= "500"
    )


async def keep_trying(
    down: asyncio.Event, action: Callable[[], Awaitable[object]], refused: list[str]
) -> None:
    """What a deploy pipeline does during an outage (from the moment it is `down`): try until
    the API server accepts."""
    await down.wait()
    while True:
        try:
            await action()
        except KubeError as error:
            refused.append(type(error).__name__)
            await asyncio.sleep(0.5)  # pacing between the user's attempts
        else:
            return


@dataclasses.dataclass
class Observed:
    """What one outage looked like from outside."""

    away_s: float = 0.0
    requests: Counter[str] = dataclasses.field(default_factory=Counter)
    health: list[int | None] = dataclasses.field(default_factory=list)
    refused: list[str] = dataclasses.field(default_factory=list)
    pending_at_stop: list[str] = dataclasses.field(default_factory=list)
    pending_in_cache: set[str] = dataclasses.field(default_factory=set)
    recovered_s: float = 0.0


@dataclasses.dataclass(frozen=True)
class Scene:
    """What an outage needs to reach: the cluster, kro, and a user's impatient client."""

    outages: Outages
    user: KroEnv
    gvr: GVR
    observed: Observed
    down: asyncio.Event  # set once the component is gone: the user starts writing


Hold = Callable[[Scene], Awaitable[None]]


async def take_away(scene: Scene, component: str, hold: Hold | None = None) -> None:
    """Stop `component`, `hold` (if given), start it again; count the controller's requests
    from the moment it is told to stop until it is ready again."""
    cluster, controller = scene.outages.cluster, scene.outages.controller
    before = requests_so_far(controller)
    began = time.monotonic()
    # SIGTERM: kube-apiserver stops accepting connections at once, but drains for seconds.
    await asyncio.to_thread(cluster.stop, component, grace_s=5.0)
    scene.down.set()
    if hold is not None:
        await hold(scene)
    await asyncio.to_thread(cluster.start, component)
    scene.observed.away_s = time.monotonic() - began
    scene.observed.requests = requests_so_far(controller) - before


async def not_active(kro: KroEnv, gvr: GVR, names: list[str]) -> list[str]:
    items, _ = await kro.client.list_all(gvr, namespace=kro.namespace)
    active = {meta(i)["name"] for i in items if state(i) == "ACTIVE"}
    return [n for n in names if n not in active]


async def ride_out(
    kro: KroEnv, outages: Outages, outage: Callable[[Scene], Awaitable[None]]
) -> Observed:
    """Instances mid-reconcile, then `outage`, with a user writing during and right after it;
    every instance must converge afterwards."""
    controller = outages.controller
    gvr = await serve_shelves(kro)
    names = [f"shelf-{i}" for i in range(INSTANCES)]
    labels = dict.fromkeys(names, "before")
    for name in names[:-2]:
        await kro.apply_instance(KIND, name, spec("before"))

    async def first_children() -> list[dict[str, Any]]:
        items, _ = await kro.client.list_all(
            CONFIGMAPS, namespace=kro.namespace, label_selector="kro.run/instance-name"
        )
        return items

    # Strike while kro is at work: it has written its first children, and two instances more
    # have only just been created.
    await wait_for(first_children, what="kro's first children", interval_s=0.05)
    for name in names[-2:]:
        await kro.apply_instance(KIND, name, spec("before"))
    observed = Observed(pending_at_stop=await not_active(kro, gvr, names))
    assert observed.pending_at_stop, "every instance was ACTIVE already: nothing was in flight"

    async with await Client.from_kubeconfig(outages.state.kubeconfig, options=IMPATIENT) as user:
        user_env = KroEnv(user, kro.namespace, kro.controller)
        scene = Scene(outages, user_env, gvr, observed, asyncio.Event())
        writers: list[asyncio.Task[None]] = []
        try:
            with HealthWatch(controller) as health:
                labels[names[0]] = labels["born-during"] = "during"
                writers += [
                    asyncio.create_task(
                        keep_trying(
                            scene.down,
                            functools.partial(user_env.apply_instance, KIND, name, spec("during")),
                            observed.refused,
                        )
                    )
                    for name in (names[0], "born-during")
                ]
                await outage(scene)
            observed.health = health.answers
            recovered_at = time.monotonic()

            # Right after the outage: one more change and one more instance.
            labels[names[1]] = labels["born-after"] = "after"
            await kro.apply_instance(KIND, names[1], spec("after"))
            await kro.apply_instance(KIND, "born-after", spec("after"))
            await asyncio.wait_for(asyncio.gather(*writers), RECOVERY_DEADLINE_S)

            for name, label in labels.items():
                remaining_s = RECOVERY_DEADLINE_S - (time.monotonic() - recovered_at)
                await wait_for(
                    lambda name=name, label=label: converged(kro, gvr, name, label),
                    what=f"{name} ACTIVE with children labelled {label!r}",
                    timeout_s=max(5.0, remaining_s),
                )
            observed.recovered_s = time.monotonic() - recovered_at
        except BaseException:
            for task in writers:
                task.cancel()
            with contextlib.suppress(Exception):  # the failure matters more than the clean-up
                await user_env.cleanup()
            raise
        await user_env.cleanup()

    assert controller.is_running(), f"the controller stopped: {controller.error!r}"
    assert controller.error is None
    assert controller.healthz() == 200
    assert observed.health, "/healthz was never probed"
    assert all(answer == 200 for answer in observed.health), observed.health
    assert len(observed.health) >= observed.away_s, (
        "/healthz answered too slowly to be probed about once a second",
        len(observed.health),
    )
    assert observed.refused, "the user's writes should have been refused during the outage"
    assert failed(observed.requests) <= MAX_FAILED_PER_OUTAGE_S * observed.away_s, observed
    assert controller.metrics().total("dynamic_controller_reconcile_panics_total") == 0
    return observed


def report(what: str, observed: Observed) -> None:
    print(  # shown with -s; figures for the report
        f"{what}: away {observed.away_s:.1f}s, controller requests meanwhile "
        f"{observed.requests.total()} of which failed {failed(observed.requests)} "
        f"({failed(observed.requests) / observed.away_s:.1f}/s), "
        f"{len(observed.health)} /healthz probes all 200, user writes refused "
        f"{len(observed.refused)}x, {len(observed.pending_at_stop)} instances in flight, "
        f"all converged {observed.recovered_s:.1f}s after"
    )


async def test_an_apiserver_restart_mid_reconcile(kro: KroEnv, outages: Outages) -> None:
    async def restart(scene: Scene) -> None:
        await take_away(scene, "kube-apiserver")

    report("kube-apiserver restart", await ride_out(kro, outages, restart))


async def look_at_the_cache(scene: Scene) -> None:
    """Watch the deliberate etcd outage from outside: kube-apiserver's watch cache
    (resourceVersion=0) still answers, and shows what kro last wrote."""
    observed = scene.observed
    until = time.monotonic() + ETCD_OUTAGE_S
    while time.monotonic() < until:
        try:
            page = await scene.user.client.list(
                scene.gvr, namespace=scene.user.namespace, resource_version="0"
            )
        except KubeError:
            pass
        else:
            items = page.get("items") or []
            observed.pending_in_cache |= {meta(i)["name"] for i in items if state(i) != "ACTIVE"}
        await asyncio.sleep(1.0)  # pacing between looks, within the deliberate outage


async def test_etcd_away_for_20s_mid_reconcile(kro: KroEnv, outages: Outages) -> None:
    async def etcd_outage(scene: Scene) -> None:
        await take_away(scene, "etcd", look_at_the_cache)

    observed = await ride_out(kro, outages, etcd_outage)
    # While etcd was away, the API server's cache showed instances caught mid-reconcile as not
    # ACTIVE: the failure was visible, and kro claimed nothing it had not done.
    assert observed.pending_in_cache, observed
    assert observed.pending_in_cache <= set(observed.pending_at_stop), observed
    report("etcd away 20s", observed)
