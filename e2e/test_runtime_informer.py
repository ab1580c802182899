"""kro.runtime.Informer on the real API server: its store equals the server through 1,000 changes.

Writes go through the same client at 32 in flight; after each phase (create 1,000, update
1,000, delete 500) the store must equal a fresh LIST, object for object and resourceVersion for
resourceVersion, and the handler must have been told about every change exactly as it happened.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
from runtime_e2e_support import (
    CONFIGMAPS,
    Recorder,
    cached,
    concurrently,
    configmap,
    running,
    wait_for_same_state,
)

from kro.runtime import Client, ClientOptions, Informer
from kro.testing.pytest_plugin import ClusterHandle

COUNT = 1000
WRITERS = ClientOptions(qps=0, request_timeout_s=60.0)  # unthrottled: the test is about volume


@pytest.fixture
async def client(kube_cluster: ClusterHandle) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(str(kube_cluster.kubeconfig), options=WRITERS) as c:
        yield c


async def test_store_equals_server_through_1000_creates_updates_and_deletes(
    client: Client, kube_namespace: str
) -> None:
    ns = kube_namespace
    names = [f"cm-{i:04d}" for i in range(COUNT)]
    informer = Informer(client, CONFIGMAPS, namespace=ns)
    seen = Recorder()
    informer.add_handler(seen)
    timings: dict[str, float] = {}
    async with running(informer):
        began = time.monotonic()
        await concurrently(
            names, lambda n: client.create(CONFIGMAPS, configmap(n, {"round": "0"}), namespace=ns)
        )
        await wait_for_same_state(client, informer, ns)
        timings["create"] = time.monotonic() - began
        assert set(names) <= set(seen.added)
        assert not seen.deleted

        began = time.monotonic()
        await concurrently(
            names, lambda n: client.patch(CONFIGMAPS, n, {"data": {"round": "1"}}, namespace=ns)
        )
        await wait_for_same_state(client, informer, ns)
        timings["update"] = time.monotonic() - began
        assert all(cached(informer, ns, n)["data"] == {"round": "1"} for n in names)
        assert all(seen.updated[n]["data"] == {"round": "1"} for n in names)

        gone = names[::2]
        began = time.monotonic()
        await concurrently(gone, lambda n: client.delete(CONFIGMAPS, n, namespace=ns))
        await wait_for_same_state(client, informer, ns)
        timings["delete"] = time.monotonic() - began
        assert set(seen.deleted) == set(gone)
        assert seen.delete_calls == len(gone)  # each deletion reported once
        left = [o for o in informer.store.list() if o["metadata"]["name"].startswith("cm-")]
        assert len(left) == COUNT // 2
    print(  # shown with -s; the figures are for the report, never asserted
        "informer e2e: "
        + ", ".join(
            f"{phase} {len(names) if phase != 'delete' else len(gone)} in {s:.1f}s"
            for phase, s in timings.items()
        )
    )
