"""The live registry of member clusters (M-02, M-04, M-05, M-06), against fake API servers: a
plain hub holding the Secrets and TLS members that check a bearer token."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import structlog
from fleet_fakes import (
    LABEL,
    NAMESPACE,
    ROTATED_TOKEN,
    TOKEN,
    kubeconfig,
    never_shown,
    secret,
    server_context,
    token_kubeconfig,
)

from kro.fleet import registry as registry_module
from kro.fleet.errors import ClusterNotFound, ClusterNotReady, ClusterUnreachable
from kro.fleet.registry import SECRETS, ClusterEvent, ClusterRegistry, Member
from kro.runtime import logging as runtime_logging
from kro.runtime.cache import InformerCache
from kro.runtime.client import Client
from kro.runtime.config import ConnectionConfig
from kro.runtime.errors import KubeError, TransportError
from kro.runtime.prometheus import PrometheusProvider
from kro.testing import pki
from kro.testing.fakeapi import FakeApiServer, Fault
from kro.testing.waiting import eventually

pytestmark = pytest.mark.usefixtures("no_task_leaks")

INTERVAL_S = 0.05


@dataclass
class Fleet:
    """A hub, one member server and a registry (not started: each test starts it)."""

    hub_api: FakeApiServer
    member_api: FakeApiServer
    hub: Client
    registry: ClusterRegistry
    certs: pki.ClusterPKI
    provider: PrometheusProvider
    events: list[tuple[str, ClusterEvent]] = field(default_factory=list)

    def seed(self, obj: dict[str, Any]) -> None:
        self.hub_api.seed(SECRETS, obj)

    async def put(self, obj: dict[str, Any]) -> None:
        """Replace the Secret's data and labels, as `kubectl apply` of a new version would."""
        current = await self.hub.get(SECRETS, obj["metadata"]["name"], namespace=NAMESPACE)
        current["data"] = obj["data"]
        current["metadata"]["labels"] = obj["metadata"]["labels"]
        await self.hub.update(SECRETS, current)

    def member_secret(self, name: str = "east", token: str = TOKEN) -> dict[str, Any]:
        return secret(token_kubeconfig(self.member_api.url, self.certs, token), name=name)

    def sample(self, metric: str, **labels: str) -> float | None:
        return self.provider.registry.get_sample_value(metric, labels)

    async def started(self) -> Member:
        """The registry started over the one member Secret `east`, once that member is Ready."""
        self.seed(self.member_secret())
        await self.registry.start()
        return await self.registry.wait_ready("east", timeout_s=5)

    def version_probes(self) -> int:
        return sum(1 for r in self.member_api.requests if r.path == "/version")


@contextlib.asynccontextmanager
async def fleet(
    certs: pki.ClusterPKI, *, tokens: set[str] | None = None, **registry: Any
) -> AsyncIterator[Fleet]:
    provider = PrometheusProvider(process_metrics=False)
    member_tls = server_context(certs)
    async with (
        FakeApiServer() as hub_api,
        FakeApiServer(ssl_context=member_tls, tokens={TOKEN} if tokens is None else tokens) as api,
        Client.from_config(ConnectionConfig(server=hub_api.url)) as hub,
    ):
        # No retries: a closed client says so at once (a GET would retry the failure for ~6 s).
        options = dataclasses.replace(hub.options, metrics=provider, max_retries=0)
        settings: dict[str, Any] = {
            "namespace": NAMESPACE,
            "label": LABEL,
            "options": options,
            "probe_interval_s": INTERVAL_S,
            "probe_timeout_s": 5.0,
            **registry,
        }
        found = Fleet(hub_api, api, hub, ClusterRegistry(hub, **settings), certs, provider)
        found.registry.subscribe(lambda name, event: found.events.append((name, event)))
        try:
            yield found
        finally:
            await found.registry.stop()


async def test_a_labelled_secret_becomes_a_ready_member(certs: pki.ClusterPKI) -> None:
    async with fleet(certs) as f:
        member = await f.started()
        assert (member.server, member.version, member.reason) == (
            f.member_api.url,
            "v1.35.0-fake",
            "",
        )
        assert member.secret == f"{NAMESPACE}/east"
        assert f.registry.names() == ["local", "east"]
        client = f.registry.client_for("east")
        assert client is member.client
        assert (await client.request("GET", "/version"))["gitVersion"] == "v1.35.0-fake"
        assert f.events == [("east", "added"), ("east", "ready")]


async def test_the_hub_is_always_there_under_the_local_name(certs: pki.ClusterPKI) -> None:
    """M-02: never a Secret; a Secret of that name is ignored."""
    async with fleet(certs, local_name="hub") as f:
        f.seed(f.member_secret(name="hub"))
        await f.registry.start()
        assert await f.registry.wait_synced(5)
        assert f.registry.names() == ["hub"]
        local = f.registry.get("hub")
        assert local is not None
        assert (local.local, local.ready, local.client, local.server) == (
            True,
            True,
            f.hub,
            f.hub_api.url,
        )
        assert f.registry.client_for("hub") is f.hub
        assert f.events == []


async def test_only_labelled_secrets_of_the_namespace_are_members(certs: pki.ClusterPKI) -> None:
    async with fleet(certs) as f:
        f.seed(secret(token_kubeconfig(f.member_api.url, certs), name="unlabelled", labels={}))
        f.seed(secret(token_kubeconfig(f.member_api.url, certs), name="west", namespace="other"))
        await f.registry.start()
        assert await f.registry.wait_synced(5)
        assert f.registry.names() == ["local"]
        with pytest.raises(ClusterNotFound, match=f"'west' is not registered.*{NAMESPACE}"):
            f.registry.client_for("west")
        assert f.registry.get("west") is None


async def test_a_new_secret_is_usable_within_seconds(certs: pki.ClusterPKI) -> None:
    """M-04: added while the registry runs."""
    async with fleet(certs) as f:
        await f.registry.start()
        assert await f.registry.wait_synced(5)
        await f.hub.create(SECRETS, f.member_secret(), namespace=NAMESPACE)
        await f.registry.wait_ready("east", timeout_s=5)
        assert f.registry.client_for("east") is not None


async def test_rotation_swaps_the_client_and_keeps_the_member_ready(
    certs: pki.ClusterPKI,
) -> None:
    """M-04: a new client under the same name; the old one is closed; no unready blip."""
    async with fleet(certs, tokens={TOKEN, ROTATED_TOKEN}) as f:
        await f.started()
        old = f.registry.client_for("east")
        await f.put(f.member_secret(token=ROTATED_TOKEN))
        await eventually(
            _async(lambda: f.registry.client_for("east") is not old),
            what="a new client",
            timeout_s=5,
        )
        member = f.registry.get("east")
        assert member is not None
        assert member.ready
        new = f.registry.client_for("east")
        sent = await new.request("GET", "/version")
        assert sent["gitVersion"] == "v1.35.0-fake"
        assert f.member_api.requests[-1].headers["authorization"] == f"Bearer {ROTATED_TOKEN}"
        await eventually(_closed(old), what="the old client closed", timeout_s=5)
        assert f.events == [("east", "added"), ("east", "ready"), ("east", "updated")]


async def test_a_change_that_is_not_the_kubeconfig_keeps_the_client(
    certs: pki.ClusterPKI,
) -> None:
    async with fleet(certs) as f:
        await f.started()
        before = f.registry.client_for("east")
        await f.hub.patch(
            SECRETS, "east", {"metadata": {"annotations": {"a": "b"}}}, namespace=NAMESPACE
        )
        # Events arrive in order: once west is added, east's change has been handled.
        await f.hub.create(SECRETS, f.member_secret(name="west"), namespace=NAMESPACE)
        await f.registry.wait_ready("west", timeout_s=5)
        assert f.registry.client_for("east") is before
        assert ("east", "updated") not in f.events


async def test_rotation_to_a_refused_kubeconfig_makes_the_member_unready(
    certs: pki.ClusterPKI, tmp_path: Path
) -> None:
    async with fleet(certs) as f:
        await f.started()
        old = f.registry.client_for("east")
        marker = tmp_path / "ran"
        plugin = {"apiVersion": "client.authentication.k8s.io/v1", "command": "touch",
                  "args": [str(marker)]}  # fmt: skip
        doc = token_kubeconfig(f.member_api.url, certs)
        doc["users"][0]["user"]["exec"] = plugin
        await f.put(secret(doc))
        await eventually(
            _async(lambda: ("east", "unready") in f.events), what="east unready", timeout_s=5
        )
        member = f.registry.get("east")
        assert member is not None
        assert (member.ready, member.client, member.refused) == (False, None, "ExecPlugin")
        assert f"{NAMESPACE}/east refused (ExecPlugin)" in member.reason
        with pytest.raises(ClusterNotReady, match="ExecPlugin") as caught:
            f.registry.client_for("east")
        assert TOKEN not in str(caught.value)
        await eventually(_closed(old), what="the old client closed", timeout_s=5)
        assert not marker.exists()
        assert f.sample("kro_cluster_ready", cluster="east") == 0.0


async def test_a_refused_secret_is_a_member_that_is_not_ready(
    certs: pki.ClusterPKI, tmp_path: Path
) -> None:
    """M-03: refused, named, never run; the other members are unaffected."""
    marker = tmp_path / "ran"
    doc = kubeconfig(
        {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True},
        {"exec": {"command": "touch", "args": [str(marker)]}},
    )
    async with fleet(certs) as f:
        f.seed(secret(doc, name="bad"))
        await f.started()
        member = f.registry.get("bad")
        assert member is not None
        assert (member.ready, member.client, member.server) == (False, None, "")
        assert member.refused == "InsecureSkipTLSVerify"
        assert member.reason.startswith(f"cluster Secret {NAMESPACE}/bad refused")
        assert ("bad", "added") in f.events
        assert f.registry.names() == ["local", "bad", "east"]
        assert not marker.exists()


async def test_unlabelling_or_deleting_removes_the_member(certs: pki.ClusterPKI) -> None:
    """M-04: removed and its client closed (its objects are not the registry's business)."""
    async with fleet(certs) as f:
        f.seed(f.member_secret(name="east"))
        f.seed(f.member_secret(name="west"))
        await f.registry.start()
        east_member = await f.registry.wait_ready("east", timeout_s=5)
        await f.registry.wait_ready("west", timeout_s=5)
        east = f.registry.client_for("east")
        unlabelled = f.member_secret(name="east")
        unlabelled["metadata"]["labels"] = {}
        await f.put(unlabelled)
        await f.hub.delete(SECRETS, "west", namespace=NAMESPACE)
        await eventually(
            _async(lambda: f.registry.names() == ["local"]), what="both removed", timeout_s=5
        )
        assert ("east", "removed") in f.events
        assert ("west", "removed") in f.events
        assert east_member.client is east
        await eventually(_closed(east), what="east's client closed", timeout_s=5)
        with pytest.raises(ClusterNotFound):
            f.registry.client_for("east")
        assert f.sample("kro_cluster_ready", cluster="east") is None


async def test_a_slow_member_delays_no_other(certs: pki.ClusterPKI) -> None:
    """M-05: a member whose server accepts connections and never answers."""
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    silent = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    try:
        async with fleet(certs, probe_timeout_s=1.0) as f:
            f.seed(secret(token_kubeconfig(f"https://127.0.0.1:{port}", certs), name="slow"))
            await f.started()
            slow = f.registry.get("slow")
            assert slow is not None
            assert (slow.ready, slow.reason) == (False, "not probed yet")

            def slow_failed() -> bool:
                member = f.registry.get("slow")
                return member is not None and "no answer within 1s" in member.reason

            await eventually(_async(slow_failed), what="slow's probe timed out", timeout_s=5)
            assert ("slow", "unready") in f.events
    finally:
        for writer in held:
            writer.close()
        silent.close()
        await silent.wait_closed()


async def test_a_member_that_comes_back_is_seen_without_a_user(certs: pki.ClusterPKI) -> None:
    """A member that is not Ready is probed on every interval: its credentials accepted later
    (RBAC fixed, token activated) make it Ready without a change to its Secret."""
    async with fleet(certs, tokens={"someone-else"}) as f:
        f.seed(f.member_secret())
        await f.registry.start()

        def rejected() -> bool:
            member = f.registry.get("east")
            return member is not None and "401 Unauthorized" in member.reason

        await eventually(_async(rejected), what="east rejected", timeout_s=5)
        assert f.sample("kro_cluster_ready", cluster="east") == 0.0
        assert f.member_api.tokens is not None
        f.member_api.tokens.add(TOKEN)
        await f.registry.wait_ready("east", timeout_s=5)
        assert f.events == [("east", "added"), ("east", "unready"), ("east", "ready")]


async def test_a_ready_member_is_probed_again_only_when_used(certs: pki.ClusterPKI) -> None:
    """M-06: every interval while it has users."""
    async with fleet(certs) as f:
        await f.started()
        probes = f.version_probes()
        await asyncio.sleep(INTERVAL_S * 6)  # an absence: nothing to wait on but time
        assert f.version_probes() == probes
        f.registry.client_for("east")
        await eventually(
            _async(lambda: f.version_probes() > probes), what="a probe after use", timeout_s=5
        )
        assert any(r.path == "/apis" for r in f.member_api.requests)  # discovery is probed too


async def test_a_member_whose_requests_were_answered_is_not_probed(
    certs: pki.ClusterPKI,
) -> None:
    """M-06, a quiet fleet: a member its users just reached needs no probe; one whose request
    went unanswered does."""
    async with fleet(certs) as f:
        await f.started()
        client = f.registry.client_for("east")
        await client.request("GET", "/api/v1/namespaces/default/configmaps")
        probes = f.version_probes()
        await asyncio.sleep(INTERVAL_S * 6)  # an absence: nothing to wait on but time
        assert f.version_probes() == probes
        f.registry.client_for("east")
        f.member_api.inject(Fault("status", method="GET", path="/configmaps", status=500, times=9))
        with contextlib.suppress(KubeError):  # the member's server failing
            await client.request("GET", "/api/v1/namespaces/default/configmaps")
        await eventually(
            _async(lambda: f.version_probes() > probes), what="a probe after a failure", timeout_s=5
        )


async def test_metrics_per_cluster(certs: pki.ClusterPKI) -> None:
    """M-06: kro_cluster_ready and kro_cluster_requests_total; the transport's own series stay."""
    async with fleet(certs) as f:
        await f.started()
        assert f.sample("kro_cluster_ready", cluster="local") == 1.0
        assert f.sample("kro_cluster_ready", cluster="east") == 1.0
        before = f.sample("kro_cluster_requests_total", cluster="east", method="GET", code="200")
        assert before is not None
        assert before >= 1
        await f.registry.client_for("east").request("GET", "/version")
        after = f.sample("kro_cluster_requests_total", cluster="east", method="GET", code="200")
        assert after == before + 1
        host = f.member_api.url.removeprefix("https://")
        assert f.sample("rest_client_requests_total", code="200", method="GET", host=host)
        scrape = f.provider.render().decode()
        for text in never_shown(certs):
            assert text not in scrape


@pytest.fixture
def registry_logs(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """structlog's defaults and a logger the registry has not used yet: a command run earlier
    in this process may have configured logging at error level, and loggers cache what they
    were first used with."""
    runtime_logging._reset()
    monkeypatch.setattr(registry_module, "log", structlog.get_logger(registry_module.__name__))
    yield
    runtime_logging._reset()


@pytest.mark.usefixtures("registry_logs")
async def test_logs_never_carry_credentials(certs: pki.ClusterPKI) -> None:
    """M-06: added, ready, rotated, refused and removed, logged by name and reason only."""
    async with fleet(certs, tokens={TOKEN, ROTATED_TOKEN}) as f:
        with structlog.testing.capture_logs() as logs:
            await f.started()
            await f.put(f.member_secret(token=ROTATED_TOKEN))
            await eventually(
                _async(lambda: ("east", "updated") in f.events), what="rotated", timeout_s=5
            )
            password = kubeconfig(
                {"server": f.member_api.url}, {"username": "u", "password": ROTATED_TOKEN}
            )
            await f.put(secret(password))
            await eventually(
                _async(lambda: ("east", "unready") in f.events), what="refused", timeout_s=5
            )
            await f.hub.delete(SECRETS, "east", namespace=NAMESPACE)
            await eventually(
                _async(lambda: ("east", "removed") in f.events), what="removed", timeout_s=5
            )
    events = [entry["event"] for entry in logs if entry.get("cluster") == "east"]
    for expected in ("cluster.added", "cluster.ready", "cluster.rotated", "cluster.refused",
                     "cluster.unready", "cluster.removed"):  # fmt: skip
        assert expected in events
    refused = next(entry for entry in logs if entry["event"] == "cluster.refused")
    assert refused["reason"] == "BasicAuth"
    text = repr(logs)
    for secret_text in never_shown(certs):
        assert secret_text not in text


async def test_the_managers_cache_can_hold_the_watch(certs: pki.ClusterPKI) -> None:
    """With the manager's InformerCache the Secret informer is the cache's (shared, counted in
    readiness) and the registry runs none of its own."""
    async with fleet(certs) as f:
        cache = InformerCache(f.hub)
        f.registry = ClusterRegistry(
            f.hub, namespace=NAMESPACE, label=LABEL, cache=cache, probe_interval_s=INTERVAL_S
        )
        f.seed(f.member_secret())
        await f.registry.start()
        running = asyncio.create_task(cache.run())
        try:
            await f.registry.wait_ready("east", timeout_s=5)
            assert [i.gvr for i in cache.informers()] == [SECRETS]
            assert cache.has_synced()
        finally:
            await f.registry.stop()
            running.cancel()
            await asyncio.wait([running])


async def test_stop_closes_every_member_client_but_not_the_hubs(certs: pki.ClusterPKI) -> None:
    async with fleet(certs) as f:
        await f.started()
        east = f.registry.client_for("east")
        await f.registry.stop()
        with pytest.raises(TransportError, match="closed"):
            await east.request("GET", "/version")
        assert f.registry.names() == ["local"]
        assert await f.hub.request("GET", "/version")
        assert f.sample("kro_cluster_ready", cluster="local") is None


async def test_wait_ready_says_why_not(certs: pki.ClusterPKI) -> None:
    async with fleet(certs) as f:
        f.seed(secret(kubeconfig({"server": "http://127.0.0.1:1"}, {"token": TOKEN})))
        await f.registry.start()
        with pytest.raises(TimeoutError, match=r"'east' not ready after 0.2s.*InsecureServer"):
            await f.registry.wait_ready("east", timeout_s=0.2)
        with pytest.raises(TimeoutError, match="not registered"):
            await f.registry.wait_ready("nowhere", timeout_s=0.1)


async def test_a_failing_listener_does_not_stop_the_others(certs: pki.ClusterPKI) -> None:
    async with fleet(certs) as f:

        def broken(name: str, event: ClusterEvent) -> None:
            raise RuntimeError("listener bug")

        unsubscribe = f.registry.subscribe(broken)
        await f.started()
        assert f.events == [("east", "added"), ("east", "ready")]
        unsubscribe()


def test_a_label_must_be_one_key_value(certs: pki.ClusterPKI) -> None:
    hub = Client.from_config(ConnectionConfig(server="http://127.0.0.1:1"))
    with pytest.raises(ValueError, match="key=value"):
        ClusterRegistry(hub, namespace=NAMESPACE, label="just-a-key")


# -- helpers ----------------------------------------------------------------------------------


def _async(check: Any) -> Any:
    async def probe() -> Any:
        try:
            return check()
        except (ClusterNotFound, ClusterNotReady):
            return False

    return probe


def _closed(client: Client) -> Any:
    async def probe() -> bool:
        try:
            await client.request("GET", "/version")
        except TransportError as error:
            return "closed" in str(error)
        return False

    return probe


# -- passive health: an unanswered request (M-06) ------------------------------------------


async def test_an_unanswered_request_names_the_member_and_makes_it_unready_at_once(
    certs: pki.ClusterPKI,
) -> None:
    """No probe is due (a long interval): the user's failed request itself tells the registry,
    and the next answered request brings the member back."""
    async with fleet(certs, probe_interval_s=3600.0) as f:
        await f.started()
        client = f.registry.client_for("east")
        # More drops than aiohttp's own retry of a pooled connection the server closed.
        f.member_api.inject(Fault("drop", method="GET", path="/configmaps", times=9))
        with pytest.raises(ClusterUnreachable) as dropped:
            await client.request("GET", "/api/v1/namespaces/default/configmaps")
        assert isinstance(dropped.value, TransportError)  # whoever retries on one still does
        assert str(dropped.value).startswith('cluster "east" is unreachable: ServerDisconnected')
        assert dropped.value.condition_reason == "ClusterUnreachable"
        assert f.events[-1] == ("east", "unready")
        assert f.sample("kro_cluster_ready", cluster="east") == 0.0
        with pytest.raises(ClusterNotReady) as told:
            f.registry.client_for("east")
        assert told.value.condition_reason == "ClusterUnreachable"
        assert str(told.value).startswith('cluster "east" is unreachable: ServerDisconnected')
        for text in never_shown(certs):
            assert text not in str(told.value)
        # An informer holding the client keeps trying: its first answer is the member back.
        f.member_api.faults.clear()
        await client.request("GET", "/api/v1/namespaces/default/configmaps")
        assert f.events[-1] == ("east", "ready")
        assert f.registry.client_for("east") is client
        assert f.sample("kro_cluster_ready", cluster="east") == 1.0


async def test_an_error_status_is_an_answer(certs: pki.ClusterPKI) -> None:
    """A 500 says the member serves (its object or handler failed): it stays Ready."""
    async with fleet(certs, probe_interval_s=3600.0) as f:
        await f.started()
        client = f.registry.client_for("east")
        f.member_api.inject(Fault("status", method="GET", path="/configmaps", status=500))
        with pytest.raises(KubeError) as failed:
            await client.request("GET", "/api/v1/namespaces/default/configmaps")
        assert not isinstance(failed.value, ClusterUnreachable)
        assert f.registry.client_for("east") is client


async def test_a_member_that_never_answers_its_probe_is_unreachable(
    certs: pki.ClusterPKI,
) -> None:
    """A probe that got no answer says ClusterUnreachable; rejected credentials do not (the
    member answered: ClusterNotFound, its message telling why)."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    async with fleet(certs, tokens={"someone-else"}) as f:
        f.seed(secret(token_kubeconfig(f"https://127.0.0.1:{port}", certs), name="gone"))
        f.seed(f.member_secret())
        await f.registry.start()

        def judged() -> bool:
            gone, east = f.registry.get("gone"), f.registry.get("east")
            return all(m is not None and m.reason != "not probed yet" for m in (gone, east))

        await eventually(_async(judged), what="both members probed", timeout_s=5)
        with pytest.raises(ClusterNotReady) as gone:
            f.registry.client_for("gone")
        assert gone.value.condition_reason == "ClusterUnreachable"
        assert str(gone.value) == (
            'cluster "gone" is unreachable: version: ClientConnectorError: cannot connect: '
            "ECONNREFUSED"
        )
        with pytest.raises(ClusterNotReady) as rejected:
            f.registry.client_for("east")
        assert rejected.value.condition_reason == "ClusterNotFound"
        assert "401 Unauthorized" in str(rejected.value)


async def test_watch_count_per_cluster_from_the_start(certs: pki.ClusterPKI) -> None:
    """M-06 kro_cluster_watch_count: every cluster of the registry, counted when scraped."""
    held = {"east": 0}
    async with fleet(certs) as f:
        f.seed(f.member_secret())
        f.registry.count_watches(lambda cluster: held.get(cluster, 7))
        await f.registry.start()
        await f.registry.wait_synced(5)
        assert f.sample("kro_cluster_watch_count", cluster="east") == 0.0
        assert f.sample("kro_cluster_watch_count", cluster="local") == 7.0
        held["east"] = 3
        assert f.sample("kro_cluster_watch_count", cluster="east") == 3.0
        await f.hub.delete(SECRETS, "east", namespace=NAMESPACE)
        await eventually(
            _async(lambda: f.registry.get("east") is None), what="east removed", timeout_s=5
        )
        assert f.sample("kro_cluster_watch_count", cluster="east") is None
