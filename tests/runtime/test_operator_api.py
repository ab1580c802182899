"""What an operator author writes on kro.runtime: kinds by name (resolved through discovery),
the manager's one client (cached reads, filtered informers included, direct writes), typed
status writes, the builder's finalizer, and the runner's options; against the in-process fake
API server with a real Manager."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import Field

from kro.runtime import errors
from kro.runtime.client import Client
from kro.runtime.conditions import set_condition
from kro.runtime.gvk import GVK, GVR
from kro.runtime.manager import Manager, ManagerOptions
from kro.runtime.runner import RunOptions, load_setup, options_from, run_manager
from kro.runtime.typed import Condition, KubeModel, WireModel
from kro.testing import waiting
from kro.testing.fakeapi import FakeApiServer, FakeResource

pytestmark = pytest.mark.usefixtures("no_task_leaks")

CM = GVR("", "v1", "configmaps")
SECRETS = GVR("", "v1", "secrets")
DEPLOYMENTS = GVR("apps", "v1", "deployments")
SITES = GVR("example.com", "v1", "sites")


class SiteStatus(WireModel):
    ready_replicas: int = 0
    conditions: list[Condition] = []


class Site(KubeModel):
    gvk = GVK("example.com", "v1", "Site")  # no gvr: discovery finds `sites`
    status: SiteStatus = Field(default_factory=SiteStatus)


def configmap(name: str, namespace: str = "ns", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {"k": "v"},
    }


def make_manager(client: Client, namespace: str | None = None) -> Manager:
    options = ManagerOptions(handle_signals=False, namespace=namespace, name="test-operator")
    return Manager(options, client=client)


@contextlib.asynccontextmanager
async def running(manager: Manager) -> AsyncIterator[None]:
    task = asyncio.create_task(manager.run())
    try:

        async def ready() -> bool:
            if task.done():
                task.result()
            return manager.is_ready()

        await eventually(ready)
        yield
    finally:
        manager.stop()
        await asyncio.wait_for(task, timeout=5)


async def eventually(check: Any, timeout_s: float = 5.0) -> None:
    await waiting.eventually(check, what="the condition", timeout_s=timeout_s, interval_s=0.02)


# -- kinds through discovery -------------------------------------------------------------------


async def test_kinds_are_found_by_kubectls_names(client: Client) -> None:
    mapper = client.mapper
    assert mapper.find("Deployment") is None, "nothing is known before discovery is read"
    await mapper.refresh()
    for name in ("Deployment", "deployments", "deployment", "Deployment.apps",
                 "deployments.v1.apps"):  # fmt: skip
        info = mapper.find(name)
        assert info is not None, name
        assert info.gvr == DEPLOYMENTS, name
    assert mapper.find("ConfigMap.apps") is None
    assert mapper.find("Frobnicator") is None
    with pytest.raises(errors.NoKindMatch):
        await mapper.resolve("Frobnicator")


async def test_a_controller_named_by_kind_reconciles_and_queues_owners(
    fake_api: FakeApiServer, client: Client
) -> None:
    fake_api.seed(CM, configmap("a"))
    fake_api.seed(CM, configmap("elsewhere", namespace="other"))
    manager = make_manager(client, namespace="ns")
    seen: list[str] = []

    async def record(cm: dict[str, Any]) -> None:
        seen.append(cm["metadata"]["name"])

    controller = manager.controller().for_("ConfigMap").owns("Deployment")
    controller.reconcile_objects(record)
    async with running(manager):
        await eventually(lambda: _true(seen == ["a"]))
    gvrs = {(i.gvr, i.namespace) for i in manager.cache.informers()}
    assert gvrs == {(CM, "ns"), (DEPLOYMENTS, "ns")}  # the manager's namespace, plurals found


async def _true(value: bool) -> bool:
    return value


async def test_a_kind_served_after_discovery_was_read_is_found_when_the_manager_starts(
    fake_api: FakeApiServer, client: Client
) -> None:
    await client.mapper.refresh()  # read before the CRD exists (an earlier lookup did it)
    fake_api.add_resource(FakeResource("example.com", "v1", "sites", "Site"))
    fake_api.seed(SITES, {"apiVersion": "example.com/v1", "kind": "Site",
                          "metadata": {"name": "late", "namespace": "ns"}})  # fmt: skip
    manager = make_manager(client)
    seen: list[str] = []

    async def record(site: dict[str, Any]) -> None:
        seen.append(site["metadata"]["name"])

    manager.controller().for_("Site.example.com").reconcile_objects(record)
    async with running(manager):
        await eventually(lambda: _true(seen == ["late"]))


async def test_an_unknown_kind_ends_run_with_no_kind_match(client: Client) -> None:
    manager = make_manager(client)

    async def nothing(obj: dict[str, Any]) -> None: ...

    manager.controller().for_("Frobnicator").reconcile_objects(nothing)
    with pytest.raises(errors.NoKindMatch, match="Frobnicator"):
        await asyncio.wait_for(manager.run(), 5)


# -- the manager's client ----------------------------------------------------------------------


async def test_a_primary_filtered_by_selector_is_read_from_its_filtered_cache(
    fake_api: FakeApiServer, client: Client
) -> None:
    fake_api.seed(CM, configmap("web", app="web"))
    fake_api.seed(CM, configmap("db", app="db"))
    manager = make_manager(client)
    seen: list[str] = []

    async def record(cm: dict[str, Any]) -> None:
        seen.append(cm["metadata"]["name"])

    manager.controller().for_(CM).with_selector(label="app=web").reconcile_objects(record)
    async with running(manager):
        await eventually(lambda: _true(seen == ["web"]))
        await client.patch(CM, "web", {"data": {"k": "2"}}, namespace="ns")
        await eventually(lambda: _true(len(seen) == 2))
        reads = manager.reader.api_reads
        assert reads == 0, "every reconcile of a filtered primary must be served by its cache"
        # A get of an object outside the selector is asked of the server, not answered NotFound.
        db = await manager.client.get("ConfigMap", "db", namespace="ns")
        assert db["metadata"]["labels"] == {"app": "db"}
        assert manager.reader.api_reads == 1
        hit = await manager.client.get("ConfigMap", "web", namespace="ns")
        assert hit["data"] == {"k": "2"}
        assert manager.reader.api_reads == 1


async def test_writes_take_their_kind_from_the_object_or_a_name(
    fake_api: FakeApiServer, client: Client
) -> None:
    manager = make_manager(client)
    mc = manager.client
    await mc.apply(configmap("applied"))
    written = fake_api.object(CM, "applied", "ns")
    assert written is not None
    assert written["data"] == {"k": "v"}
    await mc.patch("ConfigMap", written, {"data": {"k": "patched"}})
    assert (fake_api.object(CM, "applied", "ns") or {}).get("data") == {"k": "patched"}
    await mc.delete("configmaps", "applied", namespace="ns")
    assert fake_api.object(CM, "applied", "ns") is None
    assert await mc.delete("ConfigMap", "applied", namespace="ns", missing_ok=True) is None
    with pytest.raises(errors.NotFound):
        await mc.delete("ConfigMap", "applied", namespace="ns")
    listed = {"metadata": {"name": "no-kind", "namespace": "ns"}}  # as list items come
    with pytest.raises(TypeError, match="name the kind"):
        await mc.apply(listed)


async def test_patch_and_delete_take_the_kind_from_an_object_as_apply_does(
    fake_api: FakeApiServer, client: Client
) -> None:
    mc = make_manager(client).client
    written = await mc.apply(configmap("inferred"))
    patched = await mc.patch(written, {"data": {"k": "patched"}})
    assert patched["data"] == {"k": "patched"}
    assert (fake_api.object(CM, "inferred", "ns") or {}).get("data") == {"k": "patched"}
    await mc.delete(patched)
    assert fake_api.object(CM, "inferred", "ns") is None
    assert await mc.delete(patched, missing_ok=True) is None
    with pytest.raises(errors.NotFound):
        await mc.delete(patched)
    with pytest.raises(TypeError, match="names a kind but no object"):
        await mc.patch("ConfigMap", {"data": {}})
    with pytest.raises(TypeError, match="name the kind"):
        await mc.delete({"metadata": {"name": "inferred", "namespace": "ns"}})


async def test_a_typed_object_is_patched_and_deleted_as_its_model(
    fake_api: FakeApiServer, client: Client
) -> None:
    fake_api.add_resource(FakeResource("example.com", "v1", "sites", "Site"))
    meta = {"name": "s", "namespace": "ns"}
    fake_api.seed(SITES, {"apiVersion": "example.com/v1", "kind": "Site", "metadata": meta})
    mc = make_manager(client).client
    site = await mc.get(Site, "s", namespace="ns")
    await mc.patch(site, {"metadata": {"labels": {"tier": "web"}}})
    assert (fake_api.object(SITES, "s", "ns") or {})["metadata"]["labels"] == {"tier": "web"}
    await mc.delete(site)
    assert fake_api.object(SITES, "s", "ns") is None


async def test_a_typed_status_is_written_with_the_models_fields_once(
    fake_api: FakeApiServer, client: Client
) -> None:
    fake_api.add_resource(FakeResource("example.com", "v1", "sites", "Site"))
    meta = {"name": "s", "namespace": "ns", "generation": 1}
    fake_api.seed(SITES, {"apiVersion": "example.com/v1", "kind": "Site", "metadata": meta})
    manager = make_manager(client)
    passes = 0

    async def reconcile(site: Site) -> None:
        nonlocal passes
        passes += 1
        site.status.ready_replicas = 2
        set_condition(site.status, "Available", "True", reason="Ready",
                      observed_generation=site.metadata.generation)  # fmt: skip
        await manager.client.update_status(site)

    manager.controller().for_(Site).reconcile_objects(reconcile)
    async with running(manager):
        await eventually(lambda: _true(manager.client.status_writer.writes == 1))
        await eventually(lambda: _true(passes >= 2))  # our own write is an update event
        await asyncio.sleep(0.2)
    status = (fake_api.object(SITES, "s", "ns") or {})["status"]
    assert status["readyReplicas"] == 2  # camelCase on the wire, snake_case in the model
    (condition,) = status["conditions"]
    assert condition["type"] == "Available"
    assert condition["observedGeneration"] == 1
    assert manager.client.status_writer.writes == 1, "an unchanged status is not written again"
    assert Site.gvr == SITES


# -- the builder's finalizer -------------------------------------------------------------------

FINALIZER = "example.com/cleanup"


async def test_finalize_adds_cleans_up_once_and_releases(
    fake_api: FakeApiServer, client: Client
) -> None:
    wanted_cm = configmap("keep")
    wanted_cm["metadata"]["annotations"] = {"wanted": "yes"}
    fake_api.seed(CM, wanted_cm)
    manager = make_manager(client)
    cleaned: list[str] = []
    reconciled: list[str] = []

    async def cleanup(cm: dict[str, Any]) -> None:
        cleaned.append(cm["metadata"]["name"])

    async def reconcile(cm: dict[str, Any]) -> None:
        reconciled.append(cm["metadata"]["name"])

    def wanted(cm: dict[str, Any]) -> bool:
        return "wanted" in (cm["metadata"].get("annotations") or {})

    (manager.controller().for_("ConfigMap").finalize(FINALIZER, cleanup, needed=wanted)
        .reconcile_objects(reconcile))  # fmt: skip

    def finalizers() -> list[str]:
        obj = fake_api.object(CM, "keep", "ns")
        return [] if obj is None else list(obj["metadata"].get("finalizers") or [])

    async with running(manager):
        await eventually(lambda: _true(finalizers() == [FINALIZER] and bool(reconciled)))
        # No longer wanted: cleaned up once, released, and the reconciler is not called for it.
        before = len(reconciled)
        await client.patch(CM, "keep", {"metadata": {"annotations": {"wanted": None}}},
                           namespace="ns")  # fmt: skip
        await eventually(lambda: _true(finalizers() == [] and cleaned == ["keep"]))
        await asyncio.sleep(0.2)
        assert len(reconciled) == before
        # Wanted again, then deleted: the finalizer holds it until cleanup has run.
        await client.patch(CM, "keep", {"metadata": {"annotations": {"wanted": "yes"}}},
                           namespace="ns")  # fmt: skip
        await eventually(lambda: _true(finalizers() == [FINALIZER]))
        await client.delete(CM, "keep", namespace="ns")
        await eventually(lambda: _true(fake_api.object(CM, "keep", "ns") is None))
    assert cleaned == ["keep", "keep"]


# -- the runner --------------------------------------------------------------------------------


def test_flags_override_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WATCH_NAMESPACE", "from-env")
    monkeypatch.setenv("LEADER_ELECT", "true")
    monkeypatch.setenv("POD_NAMESPACE", "operators")
    monkeypatch.setenv("HEALTH_PROBE_BIND_ADDRESS", ":8081")
    options, _ = options_from(["--namespace", "from-flag", "-v"], name="my-op")
    assert options.namespace == "from-flag"
    assert options.log_level == "debug"
    manager_options = options.manager_options()
    assert manager_options.health_probe_bind_address == ":8081"
    assert manager_options.namespace == "from-flag"
    assert manager_options.name == "my-op"
    election = manager_options.leader_election
    assert election is not None
    assert (election.lease_name, election.lease_namespace) == ("my-op", "operators")


def test_an_operator_file_is_loaded_by_path(tmp_path: Path) -> None:
    source = tmp_path / "tiny_operator.py"
    source.write_text(
        textwrap.dedent("""
        def setup(manager):
            manager.touched = True

        def other(manager):
            pass
    """)
    )
    assert load_setup(str(source)).__name__ == "setup"
    assert load_setup(f"{source}:other").__name__ == "other"
    with pytest.raises(SystemExit, match="no function missing"):
        load_setup(f"{source}:missing")


async def test_run_manager_calls_setup_with_discovery_read_and_runs_until_stopped(
    fake_api: FakeApiServer, client: Client
) -> None:
    fake_api.seed(CM, configmap("a"))
    seen: list[str] = []
    managers: list[Manager] = []

    async def setup(manager: Manager) -> None:
        managers.append(manager)
        assert manager.client.mapper.find("ConfigMap") is not None

        async def record(cm: dict[str, Any]) -> None:
            seen.append(cm["metadata"]["name"])

        manager.controller().for_("ConfigMap").reconcile_objects(record)

    options = RunOptions(name="tiny", namespace="ns")
    task = asyncio.create_task(run_manager(setup, options, client=client))
    await eventually(lambda: _true(seen == ["a"]))
    managers[0].stop()
    await asyncio.wait_for(task, 5)
    assert managers[0].options.handle_signals  # a process's manager handles SIGTERM


def write_kubeconfig(path: Path, server: str) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }))  # fmt: skip
    return path


OPERATOR = """
from kro.runtime import Manager

async def setup(manager: Manager) -> None:
    async def mark(cm):
        await manager.client.patch("ConfigMap", cm, {"metadata": {"labels": {"seen": "yes"}}})

    manager.controller().for_(KIND).reconcile_objects(mark)
"""


async def start_operator(tmp_path: Path, server: str, kind: str) -> asyncio.subprocess.Process:
    source = tmp_path / "marker_operator.py"
    source.write_text(f"KIND = {kind!r}\n{OPERATOR}")
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server)
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kro.runtime", str(source), "--kubeconfig", str(kubeconfig),
        "--namespace", "ns", "--log-format", "json",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def test_python_m_kro_runtime_runs_an_operator_file_until_sigterm(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    fake_api.seed(CM, configmap("a"))
    process = await start_operator(tmp_path, fake_api.url, "ConfigMap")
    try:

        async def marked() -> bool:
            obj = fake_api.object(CM, "a", "ns") or {}
            return (obj.get("metadata", {}).get("labels") or {}).get("seen") == "yes"

        await eventually(marked, timeout_s=30)
        process.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(process.communicate(), 30)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, err.decode()
    log = err.decode()
    assert '"operator":"marker-operator"' in log  # the name comes from the module
    assert "manager.stopped" in log


async def test_a_fatal_error_exits_1_with_one_log_line_naming_it(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    process = await start_operator(tmp_path, fake_api.url, "Frobnicator")
    _, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 1
    failed = [line for line in err.decode().splitlines() if "runner.failed" in line]
    assert len(failed) == 1
    assert "NoKindMatch" in failed[0]
    assert "Frobnicator" in failed[0]
    assert "Traceback" not in err.decode()


def test_a_model_read_from_the_api_equals_one_validated_from_the_same_data() -> None:
    raw = {"metadata": {"name": "s", "namespace": "ns"}, "status": {"readyReplicas": 1}}
    read = Site.from_object(raw)
    assert read.loaded_status == {"readyReplicas": 1}
    assert read == Site.model_validate(raw)
    read.status.ready_replicas = 2  # changed in place; what it was read as is kept
    assert read.loaded_status == {"readyReplicas": 1}
    assert read != Site.model_validate(raw)
