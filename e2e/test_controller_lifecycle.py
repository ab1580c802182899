"""An instance's life on the real control plane: spec changes, drift, includeWhen, forEach,
external references, projected status, and a quiet steady state.

Each test builds a small RGD in its own API group; ConfigMaps keep most of them fast, and a
Deployment + Service stand in where readiness or another controller's defaults matter.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from kro_harness import (
    CONFIGMAPS,
    DEPLOYMENTS,
    SERVICES,
    KroEnv,
    condition,
    is_ready,
    kro_fixtures,
    meta,
    state,
    wait_for,
)

from kro.runtime.gvk import GVR

controller, kro = kro_fixtures()


def configmap(name: str, data: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, **metadata},
        "data": data,
    }


WEB_RESOURCES = [
    {
        "id": "deployment",
        "readyWhen": ["${deployment.status.availableReplicas == deployment.spec.replicas}"],
        "template": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "${schema.metadata.name}"},
            "spec": {
                "replicas": "${schema.spec.replicas}",
                "selector": {"matchLabels": {"app": "${schema.metadata.name}"}},
                "template": {
                    "metadata": {"labels": {"app": "${schema.metadata.name}"}},
                    "spec": {"containers": [{"name": "web", "image": "nginx"}]},
                },
            },
        },
    },
    {
        "id": "service",
        "template": {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "${schema.metadata.name}"},
            "spec": {
                "selector": "${deployment.spec.selector.matchLabels}",
                "ports": [{"port": 80, "targetPort": 80}],
            },
        },
    },
]


async def _web(kro: KroEnv, replicas: int) -> GVR:
    rgd = kro.rgd(
        "web",
        "Web",
        {"replicas": "integer | default=1"},
        WEB_RESOURCES,
        status={"availableReplicas": "${deployment.status.availableReplicas}"},
    )
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])
    await kro.apply_instance("Web", "site", {"replicas": replicas})
    gvr = await kro.gvr_of("Web")
    await kro.wait_instance(gvr, "site")
    return gvr


async def test_replicas_update_propagates_to_the_deployment(kro: KroEnv) -> None:
    gvr = await _web(kro, 1)
    await kro.apply_instance("Web", "site", {"replicas": 3})
    live = await kro.wait_instance(
        gvr, "site", lambda o: is_ready(o) and o["status"].get("availableReplicas") == 3
    )
    deployment = await kro.get(DEPLOYMENTS, "site")
    assert deployment["spec"]["replicas"] == 3
    assert meta(live)["generation"] == 2


async def test_a_deleted_service_comes_back(kro: KroEnv) -> None:
    gvr = await _web(kro, 1)
    before = await kro.get(SERVICES, "site")
    await kro.client.delete(SERVICES, "site", namespace=kro.namespace)

    async def recreated() -> dict[str, Any] | None:
        service = await kro.get(SERVICES, "site")
        return service if meta(service)["uid"] != meta(before)["uid"] else None

    service = await wait_for(recreated, what="the Service re-created")
    assert service["spec"]["selector"] == {"app": "site"}
    assert meta(service)["labels"]["kro.run/node-id"] == "service"
    await kro.wait_instance(gvr, "site")


def _optional_rgd(kro: KroEnv) -> dict[str, Any]:
    return kro.rgd(
        "optional",
        "Optional",
        {"extra": "boolean | default=false", "value": "string | default=hello"},
        [
            {
                "id": "base",
                "template": configmap(
                    "${schema.metadata.name}-base", {"v": "${schema.spec.value}"}
                ),
            },
            {
                "id": "extra",
                "includeWhen": ["${schema.spec.extra}"],
                "template": configmap(
                    "${schema.metadata.name}-extra", {"copied": "${base.data.v}"}
                ),
            },
        ],
        status={"copied": "${extra.data.copied}", "base": "${base.data.v}"},
    )


async def _optional(kro: KroEnv, extra: bool) -> GVR:
    rgd = _optional_rgd(kro)
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])
    await kro.apply_instance("Optional", "opt", {"extra": extra})
    gvr = await kro.gvr_of("Optional")
    await kro.wait_instance(gvr, "opt")
    return gvr


async def test_include_when_flip_prunes_and_restores(kro: KroEnv) -> None:
    gvr = await _optional(kro, True)
    first = await kro.get(CONFIGMAPS, "opt-extra")
    assert first["data"] == {"copied": "hello"}

    await kro.apply_instance("Optional", "opt", {"extra": False})
    await kro.wait_gone(CONFIGMAPS, "opt-extra")
    await kro.wait_instance(gvr, "opt")
    await kro.get(CONFIGMAPS, "opt-base")  # the other node is untouched

    await kro.apply_instance("Optional", "opt", {"extra": True})
    restored = await wait_for(lambda: kro.get(CONFIGMAPS, "opt-extra"), what="opt-extra re-created")
    assert meta(restored)["uid"] != meta(first)["uid"]
    await kro.wait_instance(gvr, "opt")


async def test_status_field_appears_only_when_its_data_exists(kro: KroEnv) -> None:
    gvr = await _optional(kro, False)
    live = await kro.get(gvr, "opt")
    assert live["status"]["base"] == "hello"
    assert "copied" not in live["status"]  # its resource is excluded

    await kro.apply_instance("Optional", "opt", {"extra": True})
    live = await kro.wait_instance(
        gvr, "opt", lambda o: is_ready(o) and "copied" in o["status"], what="copied shown"
    )
    assert live["status"]["copied"] == "hello"

    await kro.apply_instance("Optional", "opt", {"extra": False})
    await kro.wait_instance(
        gvr, "opt", lambda o: is_ready(o) and "copied" not in o["status"], what="copied gone"
    )


async def test_for_each_scales_up_and_down(kro: KroEnv) -> None:
    rgd = kro.rgd(
        "fanout",
        "Fanout",
        {"names": "[]string"},
        [
            {
                "id": "entries",
                "forEach": [{"name": "${schema.spec.names}"}],
                "template": configmap("${schema.metadata.name}-${name}", {"name": "${name}"}),
            }
        ],
    )
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])
    gvr = await kro.gvr_of("Fanout")

    async def items_are(names: list[str]) -> None:
        await kro.apply_instance("Fanout", "fan", {"names": names})

        wanted = {
            f"fan-{name}": (str(index), str(len(names))) for index, name in enumerate(names)
        }

        async def positions() -> dict[str, tuple[str, str]]:
            items = await kro.children(CONFIGMAPS, "fan", "entries")
            return {
                meta(i)["name"]: (
                    meta(i)["labels"].get("kro.run/collection-index", ""),
                    meta(i)["labels"].get("kro.run/collection-size", ""),
                )
                for i in items
            }

        async def probe() -> bool:
            # Names and labels together: the new items may exist a moment before the kept ones
            # are relabelled with their new index and the new size.
            return await positions() == wanted

        await wait_for(probe, what=f"items {names} with their index and size labels")
        await kro.wait_instance(gvr, "fan")
        assert await positions() == wanted

    await items_are(["a", "b"])
    await items_are(["a", "b", "c", "d"])
    await items_are(["d"])
    await items_are(["a", "d", "e"])


async def test_external_ref_waits_then_proceeds(kro: KroEnv) -> None:
    rgd = kro.rgd(
        "external",
        "Reader",
        {"source": "string"},
        [
            {
                "id": "source",
                "externalRef": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.spec.source}"},
                },
            },
            {
                "id": "copy",
                "template": configmap("${schema.metadata.name}-copy", {"v": "${source.data.v}"}),
            },
        ],
    )
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])
    await kro.apply_instance("Reader", "reader", {"source": "settings"})
    gvr = await kro.gvr_of("Reader")

    waiting = await kro.wait_instance(
        gvr,
        "reader",
        lambda o: (
            state(o) == "IN_PROGRESS"
            and "waiting" in condition(o, "ResourcesReady").get("message", "")
        ),
        what="reader waiting for its external reference",
    )
    assert condition(waiting, "ResourcesReady")["status"] == "False"
    assert await kro.children(CONFIGMAPS, "reader") == []

    settings = configmap("settings", {"v": "first"}, namespace=kro.namespace)
    await kro.client.create(CONFIGMAPS, settings, namespace=kro.namespace)
    await kro.wait_instance(gvr, "reader")
    assert (await kro.get(CONFIGMAPS, "reader-copy"))["data"] == {"v": "first"}
    external = await kro.get(CONFIGMAPS, "settings")
    assert "kro.run/owned" not in (meta(external).get("labels") or {})  # read only

    # A change of the external object reaches the instance through its watch.
    await kro.client.patch(
        CONFIGMAPS, "settings", {"data": {"v": "second"}}, namespace=kro.namespace
    )
    await wait_for(
        lambda: _data_is(kro, "reader-copy", {"v": "second"}), what="copy follows the source"
    )


async def _data_is(kro: KroEnv, name: str, data: dict[str, str]) -> bool:
    return bool((await kro.get(CONFIGMAPS, name)).get("data") == data)


async def test_steady_state_writes_nothing(kro: KroEnv) -> None:
    gvr = await _optional(kro, True)
    # ACTIVE: the pass that wrote it was the last to write. The passes after it (the 1s
    # requeue of a pass that created children, the events of its own writes) write nothing.
    live = await kro.wait_instance(gvr, "opt")
    children, now = await kro.client.list_all(CONFIGMAPS, namespace=kro.namespace)
    assert sorted(meta(c)["name"] for c in children) == [
        "kube-root-ca.crt",
        "opt-base",
        "opt-extra",
    ]
    events = await _events_within(kro, gvr, CONFIGMAPS, now, 10.0)
    assert events == [], f"writes in steady state: {events}"
    again = await kro.get(gvr, "opt")
    assert meta(again)["resourceVersion"] == meta(live)["resourceVersion"]


async def _events_within(
    kro: KroEnv, instance_gvr: GVR, child_gvr: GVR, since: str, window_s: float
) -> list[tuple[str, str, str]]:
    """Every watch event on the instance kind and the child kind in the namespace for
    `window_s` seconds after resourceVersion `since` (bookmarks excluded)."""
    seen: list[tuple[str, str, str]] = []

    async def collect(gvr: GVR) -> None:
        stream = kro.client.watch(gvr, namespace=kro.namespace, resource_version=since)
        async with contextlib.aclosing(stream):
            async for event in stream:
                if event.type != "BOOKMARK":
                    seen.append((event.type, gvr.resource, str(meta(event.object).get("name"))))

    tasks = [asyncio.create_task(collect(g)) for g in (instance_gvr, child_gvr)]
    done, _ = await asyncio.wait(tasks, timeout=window_s)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for task in done:
        task.result()  # a watch that failed early must fail the test
    return seen
