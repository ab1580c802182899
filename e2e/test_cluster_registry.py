"""The cluster registry against the real control plane (M-02 to M-07).

The session cluster registers itself as a member: a labelled Secret holding an inline
kubeconfig (the cluster's CA and a ServiceAccount token). The member becomes Ready within
seconds, answers as that ServiceAccount (not as the hub's admin), survives a credential
rotation under the same name, and goes away with its Secret. A Secret with an exec plugin is
refused with its reason and nothing runs. No token reaches a log line, a metric or the output
of `kro clusters`.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import structlog

from kro.fleet import registry as registry_module
from kro.fleet.errors import ClusterNotFound
from kro.fleet.registry import SECRETS, ClusterEvent, ClusterRegistry
from kro.runtime import logging as runtime_logging
from kro.runtime.client import Client
from kro.runtime.errors import TransportError
from kro.runtime.gvk import GVR
from kro.runtime.prometheus import PrometheusProvider
from kro.testing.adminapi import AdminApi
from kro.testing.pytest_plugin import ClusterHandle, service_account_kubeconfig
from kro.testing.waiting import eventually

REPO = Path(__file__).resolve().parents[1]
LABEL = "multicluster.runtime/cluster=true"
LABELS = {"multicluster.runtime/cluster": "true"}
SELF_SUBJECT_REVIEWS = GVR("authentication.k8s.io", "v1", "selfsubjectreviews")
FILE_FIELDS = ("certificate-authority", "client-certificate", "client-key", "tokenFile")
READY_WITHIN_S = 10.0


@pytest.fixture
async def hub(kube_cluster: ClusterHandle) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(str(kube_cluster.kubeconfig)) as client:
        yield client


@pytest.fixture
def fresh_logging(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """structlog's defaults, and a registry logger not cached by an earlier configuration, so
    that capture_logs sees every line."""
    runtime_logging._reset()
    monkeypatch.setattr(registry_module, "log", structlog.get_logger(registry_module.__name__))
    yield
    runtime_logging._reset()


def inline_kubeconfig(
    cluster: ClusterHandle, admin: AdminApi, namespace: str, account: str
) -> tuple[dict[str, Any], str]:
    """The plugin's ServiceAccount kubeconfig, checked to be inline-only, and its token."""
    path = service_account_kubeconfig(cluster, admin, namespace, account)
    document: dict[str, Any] = json.loads(Path(path).read_text())
    entries = [e["cluster"] for e in document["clusters"]] + [u["user"] for u in document["users"]]
    assert not [field for entry in entries for field in FILE_FIELDS if field in entry]
    assert all("certificate-authority-data" in e["cluster"] for e in document["clusters"])
    token = document["users"][0]["user"]["token"]
    return document, token


def member_secret(name: str, document: dict[str, Any], namespace: str) -> dict[str, Any]:
    data = base64.b64encode(json.dumps(document).encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": LABELS},
        "data": {"kubeconfig": data},
    }


def kro(*argv: str) -> subprocess.CompletedProcess[str]:
    """`python -m kro ...` of this checkout, in its own process."""
    return subprocess.run(
        [sys.executable, "-m", "kro", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO,
    )


async def identity(client: Client) -> str:
    """Who the API server says the client is (SelfSubjectReview: any authenticated user)."""
    review = await client.create(
        SELF_SUBJECT_REVIEWS,
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
    )
    return str(review["status"]["userInfo"]["username"])


@dataclass(frozen=True)
class Kubeconfigs:
    """Three member kubeconfigs of the session cluster: two ServiceAccounts (before and after a
    rotation) and one whose user is an exec plugin that would touch `marker`."""

    first: dict[str, Any]
    token: str
    rotated: dict[str, Any]
    rotated_token: str
    with_exec: dict[str, Any]
    marker: Path


@pytest.fixture
def kubeconfigs(
    kube_cluster: ClusterHandle, kube_admin: AdminApi, kube_namespace: str, tmp_path: Path
) -> Kubeconfigs:
    first, token = inline_kubeconfig(kube_cluster, kube_admin, kube_namespace, "member")
    rotated, rotated_token = inline_kubeconfig(
        kube_cluster, kube_admin, kube_namespace, "member-rotated"
    )
    marker = tmp_path / "exec-ran"
    with_exec = copy.deepcopy(first)
    with_exec["users"][0]["user"] = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": "/bin/sh",
            "args": ["-c", f"touch {marker}"],
        }
    }
    return Kubeconfigs(first, token, rotated, rotated_token, with_exec, marker)


@pytest.mark.usefixtures("fresh_logging")
async def test_the_session_cluster_as_its_own_member(
    kube_cluster: ClusterHandle,
    kube_namespace: str,
    hub: Client,
    kubeconfigs: Kubeconfigs,
) -> None:
    ns = kube_namespace
    document, rotated, with_exec = kubeconfigs.first, kubeconfigs.rotated, kubeconfigs.with_exec
    marker = kubeconfigs.marker
    provider = PrometheusProvider(process_metrics=False)
    registry = ClusterRegistry(hub, namespace=ns, label=LABEL, metrics=provider,
                               probe_interval_s=0.5)  # fmt: skip
    events: list[tuple[str, ClusterEvent]] = []
    registry.subscribe(lambda name, event: events.append((name, event)))

    def happened(name: str, event: ClusterEvent) -> Any:
        async def probe() -> bool:
            return (name, event) in events

        return probe

    with structlog.testing.capture_logs() as logs:
        await registry.start()
        try:
            assert await registry.wait_synced(30)
            # M-04: a new Secret is usable within seconds.
            started = time.monotonic()
            await hub.create(SECRETS, member_secret("self", document, ns), namespace=ns)
            member = await registry.wait_ready("self", timeout_s=READY_WITHIN_S)
            ready_after_s = time.monotonic() - started
            assert member.server == kube_cluster.server
            assert member.version.startswith("v1.")
            client = registry.client_for("self")
            assert await identity(client) == f"system:serviceaccount:{ns}:member"
            assert client.mapper.find("ConfigMap") is not None  # discovery was read
            assert provider.registry.get_sample_value("kro_cluster_ready", {"cluster": "self"})

            # M-04: rotation replaces the client under the same name; the member stays Ready.
            secret = await hub.get(SECRETS, "self", namespace=ns)
            secret["data"] = member_secret("self", rotated, ns)["data"]
            await hub.update(SECRETS, secret)

            async def swapped() -> bool:
                return registry.client_for("self") is not client

            await eventually(swapped, what="the rotated client", timeout_s=READY_WITHIN_S)
            fresh = registry.client_for("self")
            assert await identity(fresh) == f"system:serviceaccount:{ns}:member-rotated"
            still = registry.get("self")
            assert still is not None
            assert still.ready
            assert ("self", "unready") not in events
            with pytest.raises(TransportError, match="closed"):
                await client.request("GET", "/version")

            # M-03: an exec plugin is refused, by reason, and never runs.
            await hub.create(SECRETS, member_secret("exec", with_exec, ns), namespace=ns)
            await eventually(happened("exec", "added"), what="exec added", timeout_s=10)
            refused = registry.get("exec")
            assert refused is not None
            assert (refused.ready, refused.refused, refused.client) == (False, "ExecPlugin", None)
            assert f"cluster Secret {ns}/exec refused (ExecPlugin)" in refused.reason
            assert not marker.exists()

            # M-07: the CLI, as the caller reads the registry.
            argv = ["clusters", "--kubeconfig", str(kube_cluster.kubeconfig), "-n", ns]
            done = await asyncio.to_thread(kro, *argv, "-o", "json")
            assert (done.returncode, done.stderr) == (0, "")
            printed = done.stdout
            rows = {row["name"]: row for row in json.loads(printed)["clusters"]}
            assert list(rows) == ["local", "exec", "self"]
            assert (rows["local"]["reachable"], rows["self"]["reachable"]) == (True, True)
            assert rows["self"]["version"] == member.version
            assert rows["exec"]["refused"] == "ExecPlugin"

            # M-04: a deleted Secret removes the member.
            await hub.delete(SECRETS, "self", namespace=ns)
            await eventually(happened("self", "removed"), what="self removed", timeout_s=10)
            with pytest.raises(ClusterNotFound):
                registry.client_for("self")
            assert registry.names() == ["local", "exec"]
            scrape = provider.render().decode()
        finally:
            await registry.stop()

    print(f"member Ready {ready_after_s:.2f}s after its Secret was created")
    logged = [entry["event"] for entry in logs]
    for event in ("cluster.added", "cluster.ready", "cluster.rotated", "cluster.refused",
                  "cluster.removed"):  # fmt: skip
        assert event in logged
    for text in (kubeconfigs.token, kubeconfigs.rotated_token):
        for where in (repr(logs), printed, scrape):
            assert text not in where
            assert base64.b64encode(text.encode()).decode() not in where
