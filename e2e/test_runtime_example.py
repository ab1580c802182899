"""examples/runtime/configmap_operator.py, run as its docstring says, against the real cluster.

The operator runs as a separate process (`python examples/runtime/configmap_operator.py NS`
with KUBECONFIG); the test only changes ConfigMaps and reads the world: summaries appear,
follow their source, come back when edited or deleted, go when the label goes, and the process
stops cleanly on SIGTERM.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from runtime_e2e_support import CONFIGMAPS, configmap, eventually

from kro.runtime import Client, errors
from kro.testing.pytest_plugin import ClusterHandle

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "runtime" / "configmap_operator.py"
LABEL = {"example.kro.run/summarize": "true"}


@pytest.fixture
async def client(kube_cluster: ClusterHandle) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(str(kube_cluster.kubeconfig)) as c:
        yield c


@pytest.fixture
def operator(
    kube_cluster: ClusterHandle, kube_namespace: str, tmp_path: Path
) -> Iterator[subprocess.Popen[bytes]]:
    log = (tmp_path / "operator.log").open("wb")
    env = {**os.environ, "KUBECONFIG": str(kube_cluster.kubeconfig), "PROBE_ADDRESS": "127.0.0.1:0"}
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLE), kube_namespace], stdout=log, stderr=log, env=env, cwd=ROOT
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()
        if process.returncode not in (0, -signal.SIGKILL):
            print((tmp_path / "operator.log").read_text())


async def summary(client: Client, ns: str, name: str) -> dict[str, Any] | None:
    try:
        return await client.get(CONFIGMAPS, f"{name}-summary", namespace=ns)
    except errors.NotFound:
        return None


async def test_the_example_operator_keeps_summaries_in_step(
    client: Client, kube_namespace: str, operator: subprocess.Popen[bytes]
) -> None:
    ns = kube_namespace
    await client.create(CONFIGMAPS, configmap("plain", {"x": "1"}), namespace=ns)
    source = await client.create(
        CONFIGMAPS, configmap("app", {"b": "2", "a": "1"}, labels=LABEL), namespace=ns
    )

    async def summary_with(count: str, not_uid: str = "") -> dict[str, Any] | None:
        found = await summary(client, ns, "app")
        if found is None or found["data"]["count"] != count:
            return None
        return found if found["metadata"]["uid"] != not_uid else None

    first = await eventually(lambda: summary_with("2"), timeout_s=60, what="the first summary")
    assert first["data"] == {"keys": "a,b", "count": "2"}
    assert first["metadata"]["ownerReferences"][0]["uid"] == source["metadata"]["uid"]

    await client.patch(CONFIGMAPS, "app", {"data": {"c": "3"}}, namespace=ns)
    await eventually(lambda: summary_with("3"), timeout_s=30, what="the summary to follow")

    await client.patch(CONFIGMAPS, "app-summary", {"data": {"count": "99"}}, namespace=ns)
    await eventually(lambda: summary_with("3"), timeout_s=30, what="an edit to be undone")

    uid = (await summary(client, ns, "app") or {})["metadata"]["uid"]
    await client.delete(CONFIGMAPS, "app-summary", namespace=ns)
    back = await eventually(lambda: summary_with("3", not_uid=uid), timeout_s=30, what="recreate")
    assert back["data"]["keys"] == "a,b,c"

    await client.patch(
        CONFIGMAPS,
        "app",
        {"metadata": {"labels": {"example.kro.run/summarize": None}}},
        namespace=ns,
    )

    async def summary_gone() -> bool:
        return await summary(client, ns, "app") is None

    await eventually(summary_gone, timeout_s=30, what="the summary to go with the label")
    assert await summary(client, ns, "plain") is None, "unlabelled ConfigMaps are left alone"

    operator.send_signal(signal.SIGTERM)
    assert operator.wait(timeout=30) == 0, "SIGTERM should drain and exit cleanly"
