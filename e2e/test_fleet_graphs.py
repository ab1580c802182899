"""Graph nodes with cluster targets on real control planes (a hub and two members).

* M-13: a Graph reaches a member only when its ServiceAccount may `get` that cluster's
  registry Secret: refused with `ResourcesConverged=False` `ClusterForbidden` naming it, then
  applied without an edit once the grant exists; deleting the Graph deletes the member's object.
* M-11: a `forEach` over a `ref` on the registry Secrets computes each row's target
  (`${c.metadata.name}`): one bundle per member; it follows a member joining (its Secret
  labelled), and a member leaving leaves its object in place and is reported by the Graph.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fleet_support import fleet_args, fleet_fixture
from graph_support import GRAPHS, delete_graph, wait_for_graph
from kro_harness import KroEnv, kro_fixtures

from kro.api.names import CLUSTER_SECRETS_LABEL_DEFAULT
from kro.runtime.client import Client
from kro.runtime.config import load_default
from kro.runtime.errors import KubeError, NotFound
from kro.runtime.gvk import GVR
from kro.testing.fleet import Fleet
from kro.testing.waiting import eventually

ARGS = fleet_args(
    "GraphKind=true",
    extra=("--controller-namespace=kro-system", "--controller-service-account=kro"),
)
controller, kro = kro_fixtures(ARGS)
CONFIGMAPS = GVR("", "v1", "configmaps")
SECRETS = GVR("", "v1", "secrets")
SERVICE_ACCOUNTS = GVR("", "v1", "serviceaccounts")
ROLES = GVR("rbac.authorization.k8s.io", "v1", "roles")
ROLE_BINDINGS = GVR("rbac.authorization.k8s.io", "v1", "rolebindings")
REGISTRY = "kro-system"
LABEL_KEY, _, LABEL_VALUE = CLUSTER_SECRETS_LABEL_DEFAULT.partition("=")
TIMEOUT_S = 60.0


fleet = fleet_fixture()


@pytest.fixture
async def grants(kro: KroEnv) -> AsyncIterator[list[str]]:
    """Roles and bindings made in the registry namespace, deleted after the test."""
    made: list[str] = []
    yield made
    for name in made:
        for gvr in (ROLE_BINDINGS, ROLES):
            with contextlib.suppress(NotFound):
                await kro.client.delete(gvr, name, namespace=REGISTRY)


async def _grant(
    kro: KroEnv, made: list[str], account: str, verbs: list[str], names: list[str] | None = None
) -> None:
    """Let `account` (of the test namespace) do `verbs` on the registry's Secrets."""
    name = f"{kro.namespace}-{account}-{len(made)}"
    rule: dict[str, Any] = {"apiGroups": [""], "resources": ["secrets"], "verbs": verbs}
    if names:
        rule["resourceNames"] = names
    await kro.client.create(
        ROLES, {"metadata": {"name": name}, "rules": [rule]}, namespace=REGISTRY
    )
    binding = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": kro.namespace}],
    }
    await kro.client.create(ROLE_BINDINGS, binding, namespace=REGISTRY)
    made.append(name)


async def _account(kro: KroEnv, name: str) -> str:
    await kro.client.create(SERVICE_ACCOUNTS, {"metadata": {"name": name}}, namespace=kro.namespace)
    return name


async def _graph(kro: KroEnv, name: str, nodes: list[dict[str, Any]], account: str) -> None:
    body = {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "Graph",
        "metadata": {"name": name},
        "spec": {"nodes": nodes, "serviceAccountName": account},
    }
    await kro.client.create(GRAPHS, body, namespace=kro.namespace)


async def _in_member(fleet: Fleet, member: str, name: str) -> dict[str, Any] | None:
    config = await load_default(str(fleet.member(member).kubeconfig_path))
    async with Client.from_config(config) as client:
        try:
            found: dict[str, Any] = await client.get(CONFIGMAPS, name, namespace="default")
        except NotFound:
            return None
        return found


async def _label(kro: KroEnv, member: str, value: str) -> None:
    patch = {"metadata": {"labels": {LABEL_KEY: value}}}
    await kro.client.patch(SECRETS, member, patch, namespace=REGISTRY, patch_type="merge")


def _configmap(name: str, target: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": "bundle",
        "target": {"cluster": {"kubeconfigSecretName": target}},
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"},
            "data": {"from": "a Graph on the hub"},
        },
        **extra,
    }


async def test_a_graph_reaches_a_member_only_with_read_access_to_its_secret(
    fleet: Fleet, kro: KroEnv, grants: list[str]
) -> None:
    account = await _account(kro, "deployer")
    name = f"trusted-{kro.suffix}"
    await _graph(kro, "trusted", [_configmap(name, "member-1")], account)
    refused = await wait_for_graph(
        kro.client, kro.namespace, "trusted", "ResourcesConverged", "False",
        reason="ClusterForbidden", timeout_s=TIMEOUT_S,
    )  # fmt: skip
    message = str(
        next(c for c in refused["status"]["conditions"] if c["reason"] == "ClusterForbidden")[
            "message"
        ]
    )
    assert f"Secret {REGISTRY}/member-1" in message
    assert await _in_member(fleet, "member-1", name) is None
    await _grant(kro, grants, account, ["get"], ["member-1"])
    await wait_for_graph(
        kro.client, kro.namespace, "trusted", "ResourcesConverged", "True", timeout_s=TIMEOUT_S
    )
    assert await _in_member(fleet, "member-1", name) is not None
    assert await _in_member(fleet, "member-2", name) is None
    await delete_graph(kro.client, kro.namespace, "trusted")
    assert await _in_member(fleet, "member-1", name) is None


async def test_a_bundle_fans_out_over_the_registry_and_follows_members(
    fleet: Fleet, kro: KroEnv, grants: list[str]
) -> None:
    account = await _account(kro, "fleet")
    await _grant(kro, grants, account, ["get", "list", "watch"])
    name = f"bundle-{kro.suffix}"
    members = {
        "id": "members",
        "ref": {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "namespace": REGISTRY,
                "selector": {"matchLabels": {LABEL_KEY: LABEL_VALUE}},
            },
        },
    }
    bundle = _configmap(name, "${c.metadata.name}", forEach=[{"c": "${members}"}])
    await _label(kro, "member-2", "false")  # not a member yet
    try:
        await _graph(kro, "fan-out", [members, bundle], account)
        await wait_for_graph(
            kro.client, kro.namespace, "fan-out", "ResourcesConverged", "True", timeout_s=TIMEOUT_S
        )
        assert await _in_member(fleet, "member-1", name) is not None
        assert await _in_member(fleet, "member-2", name) is None
        await _label(kro, "member-2", LABEL_VALUE)  # joins: the ref's watch brings the Graph back

        async def joined() -> bool:
            return await _in_member(fleet, "member-2", name) is not None

        try:
            await eventually(joined, what="the bundle in member-2", timeout_s=TIMEOUT_S)
        except AssertionError as error:
            graph = await kro.client.get(GRAPHS, "fan-out", namespace=kro.namespace)
            raise AssertionError(f"{error}; Graph status: {graph.get('status')}") from None
        await _label(kro, "member-2", "false")  # leaves: its object stays, the Graph says so
        left = await wait_for_graph(
            kro.client, kro.namespace, "fan-out", "ResourcesConverged", "False", timeout_s=TIMEOUT_S
        )
        assert "member-2" in str(left["status"]["conditions"])
        assert await _in_member(fleet, "member-2", name) is not None
    finally:
        await _label(kro, "member-2", LABEL_VALUE)
    await wait_for_graph(
        kro.client, kro.namespace, "fan-out", "ResourcesConverged", "True", timeout_s=TIMEOUT_S
    )
    await delete_graph(kro.client, kro.namespace, "fan-out")
    assert await _in_member(fleet, "member-1", name) is None
    assert await _in_member(fleet, "member-2", name) is None


async def test_a_graph_gives_up_on_an_unreachable_member_only_when_told(
    fleet: Fleet, kro: KroEnv, grants: list[str]
) -> None:
    """M-16 for Graphs: a member that cannot be reached holds the Graph's deletion, naming
    the annotation that gives it up; with it, the Graph goes and the member's object stays."""
    account = await _account(kro, "leaver")
    await _grant(kro, grants, account, ["get"], ["member-2"])
    name = f"left-{kro.suffix}"
    await _graph(kro, "leaving", [_configmap(name, "member-2")], account)
    await wait_for_graph(
        kro.client, kro.namespace, "leaving", "ResourcesConverged", "True", timeout_s=TIMEOUT_S
    )
    outage = fleet.member("member-2").cluster
    outage.stop("kube-apiserver", kill=True)
    try:
        await kro.client.delete(GRAPHS, "leaving", namespace=kro.namespace)

        async def held() -> str | None:
            graph = await kro.client.get(GRAPHS, "leaving", namespace=kro.namespace)
            text = str((graph.get("status") or {}).get("conditions"))
            return text if "kro.run/abandon-cluster=member-2" in text else None

        await eventually(held, what="deletion held, naming the annotation", timeout_s=90.0)
        patch = {"metadata": {"annotations": {"kro.run/abandon-cluster": "member-2"}}}
        await kro.client.patch(
            GRAPHS, "leaving", patch, namespace=kro.namespace, patch_type="merge"
        )

        async def gone() -> bool:
            try:
                await kro.client.get(GRAPHS, "leaving", namespace=kro.namespace)
            except NotFound:
                return True
            return False

        await eventually(gone, what="the Graph gone", timeout_s=TIMEOUT_S)
    finally:
        outage.start("kube-apiserver")

    async def left_in_place() -> bool:
        try:
            return await _in_member(fleet, "member-2", name) is not None
        except KubeError:  # still starting
            return False

    await eventually(left_in_place, what="the object left in member-2", timeout_s=TIMEOUT_S)
    config = await load_default(str(fleet.member("member-2").kubeconfig_path))
    async with Client.from_config(config) as member:
        await member.delete(CONFIGMAPS, name, namespace="default")
