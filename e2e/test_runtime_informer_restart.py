"""kro.runtime.Informer when the API server goes away: a restart, and a forced 410 Gone.

These tests restart kube-apiserver, so they run on a control plane of their own (nodes=0, own
run directory), never on the session cluster that other tests share.

* restart: writers keep creating, changing and deleting ConfigMaps while kube-apiserver is
  stopped (SIGTERM) and started again on the same port; the store must end equal to the server.
* 410: the informer reaches the server through a TCP proxy. The proxy is cut, other clients
  delete, change and create objects, etcd is compacted and kube-apiserver is killed and started
  again (its watch cache now begins after the informer's resourceVersion). When the proxy
  heals, resuming the watch gets 410 Gone; the informer must LIST again and synthesize
  on_delete for the objects that vanished meanwhile, with their last known state.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import itertools
import json
import secrets
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from runtime_e2e_support import (
    CONFIGMAPS,
    NAMESPACES,
    Recorder,
    TcpProxy,
    cached,
    concurrently,
    configmap,
    eventually,
    running,
    wait_for_same_state,
)

from kro.runtime import Client, ClientOptions, Informer, errors
from kro.runtime.config import load_kubeconfig
from kro.testing.cluster import ClusterOptions, ClusterState, LocalCluster

OPTIONS = ClientOptions(qps=0, request_timeout_s=10.0, connect_timeout_s=2.0, max_retries=2)


@dataclasses.dataclass(frozen=True)
class OwnCluster:
    cluster: LocalCluster
    state: ClusterState


@pytest.fixture(scope="module")
def own_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnCluster]:
    cluster = LocalCluster(tmp_path_factory.mktemp("restart-cluster"), ClusterOptions(nodes=0))
    try:
        yield OwnCluster(cluster, cluster.start())
    finally:
        cluster.stop()


class CountingClient(Client):
    """Counts completed LISTs: an informer lists once at start and again only after 410 Gone."""

    lists = 0

    async def list_all(self, *args: Any, **kwargs: Any) -> Any:
        result = await super().list_all(*args, **kwargs)
        self.lists += 1
        return result


def quick_informer(client: Client, namespace: str) -> Informer:
    """An informer that retries within a second: the server comes back in seconds."""
    return Informer(client, CONFIGMAPS, namespace=namespace, backoff_base_s=0.2, backoff_cap_s=1.0)


@pytest.fixture
async def client(own_cluster: OwnCluster) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(own_cluster.state.kubeconfig, options=OPTIONS) as c:
        yield c


@pytest.fixture
async def namespace(client: Client) -> AsyncIterator[str]:
    name = f"restart-{secrets.token_hex(3)}"
    await client.create(NAMESPACES, {"metadata": {"name": name}})
    yield name
    await client.delete(NAMESPACES, name)


async def churn(client: Client, ns: str, stop: asyncio.Event, done: list[int], worker: int) -> None:
    """Create, change and delete ConfigMaps until `stop`; failures (the outage) are expected."""
    for i in itertools.count():
        if stop.is_set():
            return
        name = f"churn-{worker}-{i}"
        try:
            await client.create(CONFIGMAPS, configmap(name, {"v": "0"}), namespace=ns)
            await client.patch(CONFIGMAPS, name, {"data": {"v": "1"}}, namespace=ns)
            if i % 2:
                await client.delete(CONFIGMAPS, name, namespace=ns)
            done.append(i)
        except errors.KubeError:
            await asyncio.sleep(0.05)  # pacing while the server is away, not a wait for a result


async def test_store_equals_server_across_an_apiserver_restart(
    own_cluster: OwnCluster, client: Client, namespace: str
) -> None:
    ns = namespace
    await concurrently(
        [f"seed-{i}" for i in range(300)],
        lambda n: client.create(CONFIGMAPS, configmap(n, {"v": "0"}), namespace=ns),
    )
    informer = quick_informer(client, ns)
    async with running(informer):
        await wait_for_same_state(client, informer, ns)
        stop, done = asyncio.Event(), list[int]()
        writers = [asyncio.create_task(churn(client, ns, stop, done, w)) for w in range(4)]
        try:
            await eventually(lambda: _at_least(done, 40), timeout_s=30, what="churn to start")
            away_s = await asyncio.to_thread(own_cluster.cluster.restart_apiserver, grace_s=3.0)
            after = len(done)
            await eventually(
                lambda: _at_least(done, after + 40), timeout_s=60, what="churn after the restart"
            )
        finally:
            stop.set()
            await asyncio.gather(*writers)
        converged_s = await wait_for_same_state(client, informer, ns)
    print(f"apiserver away {away_s:.1f}s; store matched the server {converged_s:.1f}s after churn")


async def _at_least(done: list[int], count: int) -> bool:
    return len(done) >= count


def _etcd_compact(etcd_port: int) -> int:
    """Compact etcd up to its current revision (physically); returns that revision."""

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{etcd_port}{path}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return dict(json.loads(response.read()))

    revision = int(
        post("/v3/kv/range", {"key": base64.b64encode(b"/").decode()})["header"]["revision"]
    )
    post("/v3/kv/compaction", {"revision": revision, "physical": True})
    return revision


async def test_410_relists_and_synthesizes_deletes_for_what_vanished(
    own_cluster: OwnCluster, client: Client, namespace: str
) -> None:
    ns, state = namespace, own_cluster.state
    names = [f"cm-{i:03d}" for i in range(200)]
    await concurrently(
        names, lambda n: client.create(CONFIGMAPS, configmap(n, {"v": "0"}), namespace=ns)
    )
    proxy = TcpProxy(state.ports["apiserver"])
    await proxy.start()
    config = await load_kubeconfig(state.kubeconfig)
    partitioned = CountingClient(dataclasses.replace(config, server=proxy.url), OPTIONS)
    informer = quick_informer(partitioned, ns)
    seen = Recorder()
    informer.add_handler(seen)
    try:
        async with running(informer):
            await wait_for_same_state(client, informer, ns)
            cached_rv = {n: cached(informer, ns, n)["metadata"]["resourceVersion"] for n in names}
            assert partitioned.lists == 1

            proxy.partition()
            vanished, changed, born = names[:50], names[50:100], [f"new-{i}" for i in range(50)]
            await concurrently(vanished, lambda n: client.delete(CONFIGMAPS, n, namespace=ns))
            await concurrently(
                changed, lambda n: client.patch(CONFIGMAPS, n, {"data": {"v": "1"}}, namespace=ns)
            )
            await concurrently(
                born, lambda n: client.create(CONFIGMAPS, configmap(n, {"v": "0"}), namespace=ns)
            )
            await asyncio.to_thread(_etcd_compact, state.ports["etcd"])
            await asyncio.to_thread(own_cluster.cluster.restart_apiserver, kill=True)
            began = time.monotonic()
            proxy.heal()
            await wait_for_same_state(client, informer, ns)
            healed_s = time.monotonic() - began
    finally:
        await partitioned.close()
        await proxy.close()

    # An informer LISTs at start and then only after 410 Gone (a freshly restarted server may
    # answer 410 once more while its watch cache settles, hence at least).
    assert partitioned.lists >= 2, "the informer should have relisted after 410 Gone"
    assert set(seen.deleted) == set(vanished)
    # Synthesized, not watched: each on_delete carries the state cached before the partition
    # (a watched DELETED event would carry the newer resourceVersion of the deletion).
    assert {n: o["metadata"]["resourceVersion"] for n, o in seen.deleted.items()} == {
        n: cached_rv[n] for n in vanished
    }
    assert all(seen.updated[n]["data"] == {"v": "1"} for n in changed)
    assert set(born) <= set(seen.added)
    print(f"410 -> relist -> 50 synthesized deletes; store matched {healed_s:.1f}s after healing")


def test_restart_rejects_an_unknown_component(own_cluster: OwnCluster) -> None:
    with pytest.raises(ValueError, match="not running"):
        own_cluster.cluster.restart("kube-scheduler")  # nodes=0: never started
