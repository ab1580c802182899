"""A member that does not answer, as a pass sees it (M-06): the node whose object lives there is
in error with the reason `ClusterUnreachable` and a message naming the cluster, instead of the
whole pass failing with the transport's words; the owner waits for that cluster; an answer
that is an error status stays the object's business."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
from test_graph_pass import OWNERS, Binding, cm, graph, owner

from kro.api.names import NODE_STATE_ERROR, NODE_STATE_SYNCED
from kro.applyset import Applier, ApplierOptions, tooling_for
from kro.engine import GraphPass, NodeReason, PassResult
from kro.engine.applyset_ownership import ApplySetOwnership
from kro.engine.places import ClusterUnavailable, WithMembers, unreachable
from kro.engine.watches import NoWatches
from kro.fleet.errors import unanswered_in
from kro.graph.evaluate import InstanceEvaluation
from kro.runtime.client import Client, ClientOptions
from kro.runtime.config import ConnectionConfig
from kro.runtime.errors import InternalError, TransportError
from kro.testing.fakeapi import DEFAULT_RESOURCES, FakeApiServer, Fault

TARGET = {"cluster": {"kubeconfigSecretName": "${schema.spec.cluster}"}}


class _OneMember:
    """The registry's side (`MemberClusters`) with one member, `m1`, which can be made
    unreachable; the pass reaches it through the real `WithMembers`."""

    hub = "local"

    def __init__(self, member: Client) -> None:
        self.member, self.reachable = member, True

    def client(self, cluster: str) -> Client:
        if cluster != "m1" or not self.reachable:
            raise ClusterUnavailable(cluster, "ClusterNotFound", f"cluster {cluster!r} is gone")
        return self.member


@pytest.fixture
async def member_api() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer(DEFAULT_RESOURCES) as server:
        yield server


@pytest.fixture
async def member(member_api: FakeApiServer) -> AsyncIterator[Client]:
    options = ClientOptions(qps=10_000.0, burst=10_000, max_retries=0)
    heard: list[str] = []
    options = replace(options, unanswered=unanswered_in("m1", heard.append))
    async with Client(ConnectionConfig(server=member_api.url), options) as client:
        yield client


async def run_with(g: Any, client: Client, obj: dict[str, Any], member: Client) -> PassResult:
    """A controller pass over an ApplySet whose objects may live in the member `m1`."""
    places = WithMembers(client, NoWatches(), _OneMember(member))
    applier = Applier(client, ApplierOptions(tooling=tooling_for("v0.10.0")))
    ownership = ApplySetOwnership(applier=applier, client=client, gvr=OWNERS, places=places)
    work = GraphPass(
        graph=g,
        owner_obj=obj,
        binding=Binding(obj),
        client=client,
        ownership=ownership,
        watches=NoWatches(),
        evaluation=InstanceEvaluation(g, obj),
        places=places,
    )
    return await work.run()


def _graph() -> Any:
    return graph(
        [cm("here"), cm("there", target=TARGET)], spec={"cluster": "string"}, multi_cluster=True
    )


async def test_a_member_that_drops_the_read_is_the_nodes_cluster_unreachable(
    api: FakeApiServer, client: Client, member_api: FakeApiServer, member: Client
) -> None:
    member_api.inject(Fault("drop", method="GET", path="/configmaps", times=5))
    obj = owner(api, {"cluster": "m1"})
    result = await run_with(_graph(), client, obj, member)
    there = next(r for r in result if r.id == "there")
    assert there.state == NODE_STATE_ERROR
    assert there.reason is NodeReason.CLUSTER_UNREACHABLE
    assert there.message.startswith('cluster "m1" is unreachable: ServerDisconnectedError')
    assert "m1" in result.unreachable
    assert result.retry
    assert next(r for r in result if r.id == "here").state == NODE_STATE_SYNCED
    assert not [r for r in member_api.requests if r.method != "GET"]  # nothing sent there


def test_an_error_status_from_a_member_is_not_unreachable() -> None:
    error = InternalError(status=500, reason="InternalError", message="boom")
    assert unreachable("m1", error) is None
    answered = TransportError("GET /x (HTTP 200): body cut", method="GET", path="/x", status=200,
                              reason="ClientPayloadError")  # fmt: skip
    assert unreachable("m1", answered) is None
    assert unreachable("", TransportError("x", reason="ClientConnectorError")) is None


def test_another_clients_failure_is_named_by_the_pass() -> None:
    error = TransportError(
        "GET /api: ClientConnectorError: cannot connect: ECONNREFUSED",
        method="GET",
        path="/api",
        reason="ClientConnectorError",
    )
    found = unreachable("m2", error)
    assert found is not None
    assert found.reason == "ClusterUnreachable"
    assert str(found) == (
        'cluster "m2" is unreachable: GET /api: ClientConnectorError: cannot connect: ECONNREFUSED'
    )


async def test_a_member_that_drops_the_apply_is_the_nodes_cluster_unreachable(
    api: FakeApiServer, client: Client, member_api: FakeApiServer, member: Client
) -> None:
    """The read answered (a cache, or the member fell between read and apply): the apply's
    missing answer is the cluster's, named, not the node's `ApplyFailed`."""
    member_api.inject(Fault("drop", method="PATCH", path="/configmaps", times=5))
    obj = owner(api, {"cluster": "m1"})
    result = await run_with(_graph(), client, obj, member)
    there = next(r for r in result if r.id == "there")
    assert there.state == NODE_STATE_ERROR
    assert there.reason is NodeReason.CLUSTER_UNREACHABLE
    assert there.message.startswith('cluster "m1" is unreachable: ')
    assert "m1" in result.unreachable
    assert result.retry
