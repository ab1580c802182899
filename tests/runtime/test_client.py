"""Client verbs against the fake API server: what goes on the wire and what comes back."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from kro.runtime.client import Client, resource_path
from kro.runtime.errors import AlreadyExists, Conflict, Gone, Invalid, NotFound
from kro.runtime.gvk import GVR
from kro.testing.fakeapi import FakeApiServer, Fault

pytestmark = pytest.mark.usefixtures("no_task_leaks")

CM = GVR("", "v1", "configmaps")
DEPLOY = GVR("apps", "v1", "deployments")
NS = GVR("", "v1", "namespaces")


def configmap(name: str, ns: str = "default", **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": data,
    }


def deployment(name: str, ns: str = "default", replicas: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": replicas},
    }


@pytest.mark.parametrize(
    ("gvr", "kwargs", "path"),
    [
        (CM, {"namespace": "ns"}, "/api/v1/namespaces/ns/configmaps"),
        (CM, {}, "/api/v1/configmaps"),
        (NS, {"name": "ns"}, "/api/v1/namespaces/ns"),
        (DEPLOY, {"namespace": "a", "name": "b"}, "/apis/apps/v1/namespaces/a/deployments/b"),
        (
            DEPLOY,
            {"namespace": "a", "name": "b", "subresource": "status"},
            "/apis/apps/v1/namespaces/a/deployments/b/status",
        ),
    ],
    ids=["core-namespaced", "core-all-namespaces", "cluster-scoped", "group", "subresource"],
)
def test_resource_path(gvr: GVR, kwargs: dict[str, str], path: str) -> None:
    assert resource_path(gvr, **kwargs) == path


def test_resource_path_refuses_subresource_without_name() -> None:
    with pytest.raises(ValueError, match="name"):
        resource_path(DEPLOY, namespace="a", subresource="status")


async def test_create_then_get_returns_server_fields(client: Client) -> None:
    created = await client.create(CM, configmap("a", x="1"), field_manager="me")
    got = await client.get(CM, "a", namespace="default")
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    assert got["data"] == {"x": "1"}


async def test_create_sends_namespace_from_metadata_and_field_manager(
    client: Client, fake_api: FakeApiServer
) -> None:
    await client.create(CM, configmap("a", ns="team"), field_manager="kro", dry_run=True)
    req = fake_api.requests[-1]
    assert (req.method, req.path) == ("POST", "/api/v1/namespaces/team/configmaps")
    assert req.query == {"fieldManager": "kro", "dryRun": "All"}
    assert req.headers["content-type"] == "application/json"
    assert fake_api.object(CM, "a", "team") is None  # dry run persisted nothing


async def test_get_missing_raises_not_found_with_details(client: Client) -> None:
    with pytest.raises(NotFound) as info:
        await client.get(CM, "missing", namespace="default")
    assert info.value.status == 404
    assert info.value.reason == "NotFound"
    assert info.value.details["name"] == "missing"


async def test_create_twice_raises_already_exists(client: Client) -> None:
    await client.create(CM, configmap("a"))
    with pytest.raises(AlreadyExists):
        await client.create(CM, configmap("a"))


async def test_invalid_carries_field_causes(client: Client) -> None:
    with pytest.raises(Invalid) as info:
        await client.create(CM, {"metadata": {"namespace": "default"}})
    assert info.value.causes[0]["field"] == "metadata.name"


async def test_update_with_stale_resource_version_conflicts(client: Client) -> None:
    created = await client.create(CM, configmap("a", x="1"))
    fresh = dict(created, data={"x": "2"})
    await client.update(CM, fresh)
    with pytest.raises(Conflict):
        await client.update(CM, dict(created, data={"x": "3"}))


async def test_update_status_changes_only_status(client: Client) -> None:
    created = await client.create(DEPLOY, deployment("d"))
    changed = dict(created, spec={"replicas": 9}, status={"readyReplicas": 1})
    result = await client.update_status(DEPLOY, changed)
    assert result["status"] == {"readyReplicas": 1}
    assert result["spec"] == {"replicas": 1}


@pytest.mark.parametrize(
    ("patch_type", "content_type", "patch"),
    [
        ("merge", "application/merge-patch+json", {"data": {"x": "2"}}),
        (
            "json",
            "application/json-patch+json",
            [{"op": "replace", "path": "/data/x", "value": "2"}],
        ),
        ("strategic", "application/strategic-merge-patch+json", {"data": {"x": "2"}}),
    ],
    ids=["merge", "json", "strategic"],
)
async def test_patch_sends_the_content_type_of_its_kind(
    client: Client, fake_api: FakeApiServer, patch_type: Any, content_type: str, patch: Any
) -> None:
    await client.create(CM, configmap("a", x="1"))
    result = await client.patch(CM, "a", patch, namespace="default", patch_type=patch_type)
    assert result["data"] == {"x": "2"}
    assert fake_api.requests[-1].headers["content-type"] == content_type


async def test_merge_patch_with_resource_version_is_a_precondition(client: Client) -> None:
    created = await client.create(CM, configmap("a", x="1"))
    await client.patch(CM, "a", {"data": {"x": "2"}}, namespace="default")
    stale = {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}}
    with pytest.raises(Conflict):
        await client.patch(CM, "a", stale, namespace="default")


async def test_apply_sends_apply_patch_with_json_body_manager_and_force(
    client: Client, fake_api: FakeApiServer
) -> None:
    result = await client.apply(CM, configmap("a", x="1"), field_manager="kro", force=True)
    assert result["data"] == {"x": "1"}
    req = fake_api.requests[-1]
    assert (req.method, req.path) == ("PATCH", "/api/v1/namespaces/default/configmaps/a")
    assert req.headers["content-type"] == "application/apply-patch+yaml"
    assert req.query == {"fieldManager": "kro", "force": "true"}
    assert orjson.loads(req.body)["metadata"]["name"] == "a"


async def test_apply_conflict_without_force_and_takeover_with_force(client: Client) -> None:
    await client.apply(CM, configmap("a", x="1"), field_manager="one")
    with pytest.raises(Conflict) as info:
        await client.apply(CM, configmap("a", x="2"), field_manager="two")
    assert "one" in info.value.message
    taken = await client.apply(CM, configmap("a", x="2"), field_manager="two", force=True)
    assert taken["data"] == {"x": "2"}


async def test_apply_requires_a_name(client: Client) -> None:
    with pytest.raises(ValueError, match=r"metadata\.name"):
        await client.apply(CM, {"metadata": {}}, field_manager="kro")


async def test_delete_returns_none_when_gone_and_object_while_finalizing(
    client: Client, fake_api: FakeApiServer
) -> None:
    await client.create(CM, configmap("plain"))
    assert await client.delete(CM, "plain", namespace="default") is None
    held = configmap("held")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await client.create(CM, held)
    terminating = await client.delete(
        CM, "held", namespace="default", propagation_policy="Foreground", grace_period_s=0
    )
    assert terminating is not None
    assert terminating["metadata"]["deletionTimestamp"]
    options = orjson.loads(fake_api.requests[-1].body)
    assert options["propagationPolicy"] == "Foreground"
    assert options["gracePeriodSeconds"] == 0


async def test_delete_precondition_mismatch_conflicts(client: Client) -> None:
    await client.create(CM, configmap("a"))
    with pytest.raises(Conflict):
        await client.delete(CM, "a", namespace="default", preconditions={"uid": "other"})


async def test_list_pages_and_fills_item_kinds(client: Client, fake_api: FakeApiServer) -> None:
    for i in range(5):
        fake_api.seed(CM, configmap(f"cm{i}"))
    page = await client.list(CM, namespace="default", limit=2)
    assert [i["metadata"]["name"] for i in page["items"]] == ["cm0", "cm1"]
    assert page["items"][0]["kind"] == "ConfigMap"
    assert page["items"][0]["apiVersion"] == "v1"
    token = page["metadata"]["continue"]
    nxt = await client.list(CM, namespace="default", limit=2, continue_token=token)
    assert [i["metadata"]["name"] for i in nxt["items"]] == ["cm2", "cm3"]


async def test_list_all_follows_continue_tokens(client: Client, fake_api: FakeApiServer) -> None:
    for i in range(7):
        fake_api.seed(CM, configmap(f"cm{i}"))
    items, rv = await client.list_all(CM, page_size=3)
    assert len(items) == 7
    assert rv == str(fake_api.state.rv)
    assert sum(1 for r in fake_api.requests if r.query.get("limit") == "3") == 3


async def test_list_all_applies_each_to_every_item_page_by_page(
    client: Client, fake_api: FakeApiServer
) -> None:
    for i in range(5):
        fake_api.seed(CM, configmap(f"cm{i}"))
    seen_at: list[int] = []

    def each(item: dict[str, Any]) -> dict[str, Any]:
        seen_at.append(len(fake_api.requests))  # how many pages had been asked for by then
        return {"name": item["metadata"]["name"]}

    items, _ = await client.list_all(CM, page_size=2, each=each)
    assert items == [{"name": f"cm{i}"} for i in range(5)]
    pages = [r for r in fake_api.requests if r.query.get("limit") == "2"]
    assert len(pages) == 3
    first = len(fake_api.requests) - len(pages) + 1
    assert seen_at == [first, first, first + 1, first + 1, first + 2]  # before the next page


async def test_list_all_restarts_unpaginated_when_continue_expires(
    client: Client, fake_api: FakeApiServer
) -> None:
    for i in range(4):
        fake_api.seed(CM, configmap(f"cm{i}"))
    expired = {"kind": "Status", "reason": "Expired", "code": 410, "message": "too old"}
    fake_api.inject(Fault("status", path="/configmaps", status=410, body=expired, skip=1))
    items, _ = await client.list_all(CM, page_size=2)
    assert len(items) == 4
    assert "limit" not in fake_api.requests[-1].query


async def test_list_all_raises_gone_on_first_page(client: Client, fake_api: FakeApiServer) -> None:
    fake_api.inject(Fault("status", status=410, body={"reason": "Expired", "code": 410}))
    with pytest.raises(Gone):
        await client.list_all(CM)


async def test_list_selectors_and_metadata_only(client: Client, fake_api: FakeApiServer) -> None:
    fake_api.seed(
        CM,
        dict(
            configmap("a"), metadata={"name": "a", "namespace": "default", "labels": {"app": "web"}}
        ),
    )
    fake_api.seed(CM, configmap("b"))
    page = await client.list(CM, label_selector="app=web", metadata_only=True)
    assert [i["metadata"]["name"] for i in page["items"]] == ["a"]
    assert page["items"][0]["kind"] == "PartialObjectMetadata"
    assert "data" not in page["items"][0]
    req = fake_api.requests[-1]
    assert "as=PartialObjectMetadataList" in req.headers["accept"]
    assert req.query["labelSelector"] == "app=web"


async def test_request_escape_hatch_returns_text_or_json(client: Client) -> None:
    assert await client.request("GET", "/readyz") == "ok"
    version = await client.request("GET", "/version")
    assert version["major"] == "1"


async def test_token_request_via_create_subresource(
    client: Client, fake_api: FakeApiServer
) -> None:
    sa = GVR("", "v1", "serviceaccounts")
    fake_api.seed(sa, {"metadata": {"name": "robot", "namespace": "default"}})
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "metadata": {"name": "robot", "namespace": "default"},
        "spec": {"expirationSeconds": 600},
    }
    result = await client.create(sa, request, subresource="token")
    assert result["status"]["token"]
    assert fake_api.requests[-1].path.endswith("/serviceaccounts/robot/token")


async def test_user_agent_is_sent(client: Client, fake_api: FakeApiServer) -> None:
    await client.request("GET", "/version")
    assert fake_api.requests[-1].headers["user-agent"] == "kro-python"
