"""Fleet failure drills on real control planes: a hub and two members (kro.testing's fleet).

Each drill breaks one thing a fleet meets in production and checks what a user sees:

* M-22/M-05 outage and recovery: member-2's kube-apiserver stops. An instance whose objects
  live in member-1 is edited, and a new one created, and both are ACTIVE within seconds (one
  member's outage never delays another's work); the instance whose objects live in member-2
  reports the failure, then names member-2 once kro's probe has found it unready (a long
  outage); once member-2 is back it recovers by itself, no edit needed (the registry probes a
  member that is not Ready every 30 s). With more instances in the dead member than kro has
  workers, member-1's instances are not delayed either.
* M-16 deletion with an unreachable member: the instance's deletion waits (DELETING, the
  condition names member-2 and `kro.run/abandon-cluster`); the annotation lets it go: its hub
  children are deleted and its member child is left in place, still there once member-2 is
  back. Abandoning a member says so in a Warning Event on the instance.
* M-06 a member that stops answering: an instance whose ConfigMap lives in member-1 says
  `ClusterUnreachable`, naming member-1, within seconds of its kube-apiserver's crash (kro's
  first unanswered request marks the member not Ready, no probe needed); before that,
  `kro_cluster_watch_count{cluster="member-1"}` counts the informers kro holds there.
* M-04 credential rotation: member-1's registry Secret gets a new client certificate; an
  instance in member-1 keeps converging with no error reported in between.
* M-04/M-12 a cluster registered after an instance targeting it: the instance, told
  ClusterNotFound meanwhile, converges within seconds of the Secret's creation.
* M-03 a registry Secret whose kubeconfig runs an exec plugin: an instance targeting it is
  told why (ClusterNotFound, ExecPlugin), and the command never ran.

Stopped member API servers are started again in a `finally`, and every Secret written to the
hub's registry is restored or deleted: the session's fleet is shared with other modules.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fleet_support import fleet_args, fleet_fixture
from kro_harness import (
    ControllerThread,
    KroEnv,
    LogRecords,
    condition,
    is_ready,
    kro_fixtures,
    log_records,
    meta,
    state,
)

from kro.api.names import ANNOTATION_ABANDON_CLUSTER
from kro.runtime.client import Client
from kro.runtime.config import load_default
from kro.runtime.errors import NotFound
from kro.runtime.gvk import GVR
from kro.testing.fleet import (
    Fleet,
    apply_registry,
    inline_kubeconfig,
    issue_client_certificate,
    registry_secret,
)
from kro.testing.waiting import eventually

ARGS = fleet_args()
controller, kro = kro_fixtures(ARGS)
CONFIGMAPS = GVR("", "v1", "configmaps")
SECRETS = GVR("", "v1", "secrets")
EVENTS = GVR("", "v1", "events")
REGISTRY = "kro-system"
TIMEOUT_S = 60.0
PROMPT_S = 20.0
"""M-05: how long an instance in a healthy member may take while another member is down."""
RECOVERY_S = 90.0
"""M-22: a member that is back is probed within 30 s; its instances then converge unaided."""
MEMBER_READY_S = 45.0
UNREADY_S = 30.0
"""How long an instance may take to name its member once kro's probe found it unready: its
next pass (the instance is retried with backoff, and a pass may be in a 6 s retry of a GET)."""
OUTAGE_INSTANCES = 6
"""Instances in the member that goes down: more than the controller's 4 workers."""
REGISTERED_S = 10.0
"""M-04: a new registry Secret is usable within seconds (probed at once)."""
UNDELAYED_S = 3.0
"""M-05: a member-1 edit converges in about 0.2 s; a dead member must not add to that."""
EVENT_S = 5.0
"""Events are recorded in the background: what the deletion announced is there by then."""
UNREACHABLE_S = 10.0
"""M-06: from a member's crash to its instance's condition naming it (a pass, at most one GET
retry, no probe to wait for)."""


fleet = fleet_fixture()


# -- helpers ---------------------------------------------------------------------------------


def _configmap(node_id: str, name: str, *, namespace: str | None = "default") -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {
        "id": node_id,
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata,
            "data": {"value": "${schema.spec.value}"},
        },
    }


def _targeted(resource: dict[str, Any], cluster: str) -> dict[str, Any]:
    return {**resource, "target": {"cluster": {"kubeconfigSecretName": cluster}}}


async def _member_object(fleet: Fleet, member: str, name: str) -> dict[str, Any] | None:
    config = await load_default(str(fleet.member(member).kubeconfig_path))
    async with Client.from_config(config) as client:
        try:
            found: dict[str, Any] = await client.get(CONFIGMAPS, name, namespace="default")
        except NotFound:
            return None
        return found


async def _member_value(fleet: Fleet, member: str, name: str) -> str | None:
    found = await _member_object(fleet, member, name)
    return None if found is None else str((found.get("data") or {}).get("value"))


async def _delete_in_member(fleet: Fleet, member: str, name: str) -> None:
    config = await load_default(str(fleet.member(member).kubeconfig_path))
    async with Client.from_config(config) as client:
        with contextlib.suppress(NotFound):
            await client.delete(CONFIGMAPS, name, namespace="default")


def _registry_ready(controller: ControllerThread, member: str) -> bool:
    """Whether the controller's registry holds `member` Ready now."""
    assert controller.app is not None
    assert controller.app.members is not None
    found = controller.app.members.registry.get(member)
    return found is not None and found.ready


async def _wait_member_ready(controller: ControllerThread, member: str) -> None:
    """The controller's registry holds `member` Ready (a member stopped by an earlier drill is
    probed again within 30 s of coming back)."""

    async def ready() -> bool:
        return _registry_ready(controller, member)

    await eventually(ready, what=f"{member} Ready in kro's registry", timeout_s=MEMBER_READY_S)


@contextlib.asynccontextmanager
async def _apiserver_down(fleet: Fleet, member: str) -> AsyncIterator[None]:
    """`member`'s kube-apiserver stopped for the block, started again whatever happens."""
    cluster = fleet.member(member).cluster
    began = time.monotonic()
    await asyncio.to_thread(cluster.stop, "kube-apiserver", kill=True)  # a crash: no grace
    print(f"{member}'s kube-apiserver stopped in {time.monotonic() - began:.1f}s")
    try:
        yield
    finally:
        began = time.monotonic()
        await asyncio.to_thread(cluster.start, "kube-apiserver")
        print(f"{member}'s kube-apiserver started again in {time.monotonic() - began:.1f}s")


async def _probe_now(fleet: Fleet, member: str) -> None:
    """Have kro probe `member` now rather than at its next interval (up to 30 s away): its
    Secret's kubeconfig changes (a comment, same credentials), which gives the member a new
    client probed at once, then the session's Secret is put back (probed at once again)."""
    handle = fleet.member(member)
    nudged = f"{handle.kubeconfig_text}\n# probe again\n"
    await asyncio.to_thread(
        apply_registry, fleet.hub, [registry_secret(member, nudged, namespace=REGISTRY)]
    )
    await asyncio.to_thread(fleet.register)


async def _reprobe(fleet: Fleet, controller: ControllerThread, member: str) -> None:
    """`member`, back after a drill, Ready again in kro's registry without waiting up to 30 s
    for its next probe."""
    await _probe_now(fleet, member)
    await _wait_member_ready(controller, member)


def _messages(obj: dict[str, Any]) -> str:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return " | ".join(f"{c.get('type')}/{c.get('reason')}: {c.get('message')}" for c in conditions)


async def _ready_at(
    kro: KroEnv,
    gvr: GVR,
    name: str,
    *,
    fleet: Fleet,
    member: str,
    cm: str,
    value: str,
    timeout_s: float = TIMEOUT_S,
) -> float:
    """Seconds until the instance is Ready at its generation and `member` holds `value` in the
    ConfigMap `cm`."""
    began = time.monotonic()

    async def converged() -> bool:
        live = await kro.get(gvr, name)
        return is_ready(live) and await _member_value(fleet, member, cm) == value

    await eventually(converged, what=f"{name} converged in {member}", timeout_s=timeout_s)
    return time.monotonic() - began


async def _warnings_about(client: Client, namespace: str, name: str) -> list[dict[str, Any]]:
    selector = f"involvedObject.name={name},type=Warning"
    page = await client.list(EVENTS, namespace=namespace, field_selector=selector)
    return list(page.get("items") or [])


# -- M-22/M-05: one member down ----------------------------------------------------------------


def _reports_the_outage(obj: dict[str, Any]) -> bool:
    """Not ACTIVE, not Ready, and a condition says what failed: member-2 by name, or the
    refused connection (kro names the cluster only once its probe found it unready)."""
    text = _messages(obj)
    named = "member-2" in text or "ECONNREFUSED" in text
    return state(obj) != "ACTIVE" and condition(obj, "Ready").get("status") != "True" and named


class Outage:
    """Instances of one RGD whose ConfigMap goes where `spec.cluster` says (an RGD-wide
    `${schema.spec.cluster}` target); each instance's ConfigMap is named after it."""

    def __init__(self, kro: KroEnv, fleet: Fleet) -> None:
        self.kro = kro
        self.fleet = fleet
        self.gvr = GVR("", "", "")

    async def install(self, name: str) -> None:
        spec = {"name": "string", "cluster": "string", "value": "string"}
        rgd = self.kro.rgd(name, "Outage", spec, [_configmap("settings", "${schema.spec.name}")])
        rgd["spec"]["target"] = {"cluster": {"kubeconfigSecretName": "${schema.spec.cluster}"}}
        await self.kro.apply_rgd(rgd)
        await self.kro.wait_rgd_active(self.kro.rgd_name(name))
        self.gvr = await self.kro.gvr_of("Outage")

    def configmap(self, instance: str) -> str:
        return f"{instance}-{self.kro.suffix}"

    async def apply(self, instance: str, cluster: str, value: str) -> None:
        body = {"name": self.configmap(instance), "cluster": cluster, "value": value}
        await self.kro.apply_instance("Outage", instance, body)

    async def converged(self, instance: str, cluster: str, value: str) -> float:
        """Seconds until the instance is Ready and its ConfigMap in `cluster` holds `value`."""
        return await _ready_at(
            self.kro, self.gvr, instance, fleet=self.fleet, member=cluster,
            cm=self.configmap(instance), value=value,
        )  # fmt: skip

    async def all_converged(self, instances: list[str], cluster: str, value: str) -> bool:
        for instance in instances:
            live = await self.kro.get(self.gvr, instance)
            there = await _member_value(self.fleet, cluster, self.configmap(instance))
            if not is_ready(live) or there != value:
                return False
        return True


async def test_a_member_outage_is_reported_and_recovers_unaided(
    fleet: Fleet, kro: KroEnv, controller: ControllerThread
) -> None:
    await _wait_member_ready(controller, "member-2")
    drill = Outage(kro, fleet)
    await drill.install("outage")
    await drill.apply("a", "member-1", "one")
    await drill.apply("b", "member-2", "one")
    await drill.converged("a", "member-1", "one")
    await drill.converged("b", "member-2", "one")
    async with _apiserver_down(fleet, "member-2"):
        began = time.monotonic()
        await drill.apply("b", "member-2", "during")
        await drill.apply("a", "member-1", "during")
        edited_s = await drill.converged("a", "member-1", "during")
        await drill.apply("c", "member-1", "new")
        created_s = await drill.converged("c", "member-1", "new")
        failing = await kro.wait_instance(
            drill.gvr, "b", _reports_the_outage, what="b reporting the outage", timeout_s=TIMEOUT_S
        )
        reported_s = time.monotonic() - began
        print(
            f"member-2 down: a member-1 edit converged in {edited_s:.2f}s, a new member-1 "
            f"instance in {created_s:.2f}s; b reported after {reported_s:.1f}s: "
            f"{state(failing)}: {_messages(failing)}"
        )
        assert edited_s < PROMPT_S
        assert created_s < PROMPT_S

        def named(obj: dict[str, Any]) -> bool:
            return state(obj) != "ACTIVE" and "member-2" in _messages(obj)

        # A long outage: kro's probe finds member-2 unready (its next probe, within 30 s;
        # had now, to keep the drill short) and b says so by name. From then on only the
        # registry's probe, every 30 s, can tell kro that member-2 is back.
        await _probe_now(fleet, "member-2")
        failing = await kro.wait_instance(
            drill.gvr, "b", named, what="b naming member-2", timeout_s=UNREADY_S
        )
        print(f"b named member-2 after {time.monotonic() - began:.1f}s: {_messages(failing)}")
    began = time.monotonic()
    seen_ready: list[float] = []  # when kro's registry first held member-2 Ready again

    async def recovered() -> bool:
        if not seen_ready and _registry_ready(controller, "member-2"):
            seen_ready.append(time.monotonic())
        return await drill.all_converged(["b"], "member-2", "during")

    await eventually(recovered, what="b recovered", timeout_s=RECOVERY_S, interval_s=0.5)
    done = time.monotonic()
    after_ready = f", {done - seen_ready[0]:.1f}s after kro saw it Ready" if seen_ready else ""
    print(f"b ACTIVE again {done - began:.1f}s after member-2 was back{after_ready}")


async def test_a_dead_member_never_delays_a_healthy_members_instances(
    fleet: Fleet, kro: KroEnv, controller: ControllerThread
) -> None:
    """M-05: more instances live in member-2 than kro has workers; while member-2 is down,
    an edit of an instance in member-1 converges as fast as ever."""
    await _wait_member_ready(controller, "member-2")
    drill = Outage(kro, fleet)
    await drill.install("starve")
    held = [f"b{i}" for i in range(OUTAGE_INSTANCES)]
    await drill.apply("a", "member-1", "one")
    for instance in held:
        await drill.apply(instance, "member-2", "one")

    async def settled() -> bool:
        return await drill.all_converged(held, "member-2", "one")

    await eventually(settled, what="member-2's instances ACTIVE", timeout_s=TIMEOUT_S)
    await drill.converged("a", "member-1", "one")
    try:
        async with _apiserver_down(fleet, "member-2"):
            for instance in held:
                await drill.apply(instance, "member-2", "during")
            await drill.apply("a", "member-1", "during")
            edited_s = await drill.converged("a", "member-1", "during")
            print(f"{len(held)} instances on a dead member-2: a member-1 edit took {edited_s:.2f}s")
            assert edited_s < UNDELAYED_S
    finally:
        for instance in held:  # not held back by the cleanup's wait on each of them
            with contextlib.suppress(NotFound):
                await kro.client.delete(drill.gvr, instance, namespace=kro.namespace)
        await _reprobe(fleet, controller, "member-2")


# -- M-06: a member that stops answering -----------------------------------------------------


def _watch_count(controller: ControllerThread, cluster: str) -> float | None:
    """`kro_cluster_watch_count{cluster}` as /metrics shows it now (None: no such series)."""
    pattern = rf'^kro_cluster_watch_count\{{cluster="{re.escape(cluster)}"\}} (\S+)$'
    found = re.search(pattern, controller.scrape(), re.MULTILINE)
    return float(found.group(1)) if found else None


async def test_an_unreachable_member_is_named_within_seconds(
    fleet: Fleet, kro: KroEnv, controller: ControllerThread
) -> None:
    await _wait_member_ready(controller, "member-1")
    drill = Outage(kro, fleet)
    await drill.install("unreachable")
    await drill.apply("a", "member-1", "one")
    await drill.converged("a", "member-1", "one")
    counts: list[float | None] = []

    async def watched() -> bool:
        counts.append(_watch_count(controller, "member-1"))
        return (counts[-1] or 0.0) > 0

    await eventually(watched, what="kro's informers on member-1 counted", timeout_s=TIMEOUT_S)
    print(f'kro_cluster_watch_count{{cluster="member-1"}} = {counts[-1]:g}')

    def unreachable(obj: dict[str, Any]) -> bool:
        named = 'cluster "member-1" is unreachable' in _messages(obj)
        return named and condition(obj, "Ready").get("reason") == "ClusterUnreachable"

    try:
        async with _apiserver_down(fleet, "member-1"):
            began = time.monotonic()
            await drill.apply("a", "member-1", "during")
            failing = await kro.wait_instance(
                drill.gvr, "a", unreachable, what="a: ClusterUnreachable", timeout_s=UNREACHABLE_S
            )
            took = time.monotonic() - began
            print(f"member-1 down: a named it after {took:.1f}s: {_messages(failing)}")
            assert state(failing) != "ACTIVE"
            assert not _registry_ready(controller, "member-1")
    finally:
        await _reprobe(fleet, controller, "member-1")
    await drill.converged("a", "member-1", "during")


# -- M-16: deleting an instance whose member is unreachable ----------------------------------


def _split_rgd(kro: KroEnv, name: str, kind: str, member: str) -> dict[str, Any]:
    """One ConfigMap on the hub (untargeted, in the instance's namespace) and one in
    `member`."""
    return kro.rgd(
        name,
        kind,
        {"name": "string", "value": "string"},
        [
            _configmap("local", "${schema.spec.name}-hub", namespace=None),
            _targeted(_configmap("remote", "${schema.spec.name}"), member),
        ],
    )


async def _split_instance(
    kro: KroEnv, fleet: Fleet, kind: str, member: str, cm: str, **annotations: str
) -> GVR:
    """Instance `one` of `kind`, ACTIVE, with its ConfigMaps on the hub and in `member`."""
    await kro.apply_instance(kind, "one", {"name": cm, "value": "one"}, annotations=annotations)
    gvr = await kro.gvr_of(kind)
    await kro.wait_instance(gvr, "one", timeout_s=TIMEOUT_S)
    assert await _member_object(fleet, member, cm) is not None
    await kro.get(CONFIGMAPS, f"{cm}-hub")
    return gvr


async def test_deleting_with_an_unreachable_member_waits_until_abandoned(
    fleet: Fleet, kro: KroEnv, controller: ControllerThread
) -> None:
    await _wait_member_ready(controller, "member-2")
    await kro.apply_rgd(_split_rgd(kro, "split", "Split", "member-2"))
    await kro.wait_rgd_active(kro.rgd_name("split"))
    cm = f"split-{kro.suffix}"
    gvr = await _split_instance(kro, fleet, "Split", "member-2", cm)
    try:
        async with _apiserver_down(fleet, "member-2"):
            await kro.client.delete(gvr, "one", namespace=kro.namespace)

            def held(obj: dict[str, Any]) -> bool:
                text = _messages(obj)
                return (
                    state(obj) == "DELETING"
                    and "member-2" in text
                    and ANNOTATION_ABANDON_CLUSTER in text
                )

            began = time.monotonic()
            waiting = await kro.wait_instance(
                gvr, "one", held, what="the deletion held for member-2", timeout_s=TIMEOUT_S
            )
            print(f"deletion held after {time.monotonic() - began:.1f}s: {_messages(waiting)}")
            assert meta(waiting).get("deletionTimestamp")
            await kro.get(CONFIGMAPS, f"{cm}-hub")  # nothing deleted while held
            patch = {"metadata": {"annotations": {ANNOTATION_ABANDON_CLUSTER: "member-2"}}}
            began = time.monotonic()
            await kro.client.patch(gvr, "one", patch, namespace=kro.namespace, patch_type="merge")
            await kro.wait_gone(gvr, "one", timeout_s=TIMEOUT_S)
            print(f"abandoned: the instance was gone {time.monotonic() - began:.1f}s later")
            with pytest.raises(NotFound):
                await kro.get(CONFIGMAPS, f"{cm}-hub")
        left = await _member_object(fleet, "member-2", cm)
        assert left is not None, "the abandoned member's object was deleted"
        assert not meta(left).get("deletionTimestamp")
    finally:
        await _delete_in_member(fleet, "member-2", cm)
        await _reprobe(fleet, controller, "member-2")


async def test_abandoning_a_member_is_announced_in_a_warning_event(
    fleet: Fleet, kro: KroEnv
) -> None:
    """M-16: the owner's `kro.run/abandon-cluster` leaves the member's objects in place and a
    Warning Event on the owner lists the abandoned clusters (kro.api.names documents it).
    Abandoning needs no outage, so member-1 serves, up and reachable."""
    await kro.apply_rgd(_split_rgd(kro, "given-up", "GivenUp", "member-1"))
    await kro.wait_rgd_active(kro.rgd_name("given-up"))
    cm = f"given-up-{kro.suffix}"
    gvr = await _split_instance(
        kro, fleet, "GivenUp", "member-1", cm, **{ANNOTATION_ABANDON_CLUSTER: "member-1"}
    )
    try:
        await kro.client.delete(gvr, "one", namespace=kro.namespace)
        await kro.wait_gone(gvr, "one", timeout_s=TIMEOUT_S)
        with pytest.raises(NotFound):
            await kro.get(CONFIGMAPS, f"{cm}-hub")
        assert await _member_object(fleet, "member-1", cm) is not None  # left in place

        async def announced() -> list[dict[str, Any]]:
            found = await _warnings_about(kro.client, kro.namespace, "one")
            return [e for e in found if "member-1" in str(e.get("message"))]

        await eventually(announced, what="a Warning Event naming member-1", timeout_s=EVENT_S)
    finally:
        await _delete_in_member(fleet, "member-1", cm)


# -- M-04: a credential rotation -------------------------------------------------------------


def _rotated_kubeconfig(fleet: Fleet, member: str) -> str:
    """A new, valid kubeconfig for `member`: a fresh client certificate of its CA, for
    another user name."""
    handle = fleet.member(member)
    pki = handle.cluster.run_dir / "pki"
    ca_pem = (pki / "ca.crt").read_bytes()
    cert, key = issue_client_certificate(
        ca_pem, (pki / "ca.key").read_bytes(), common_name="kro-fleet-rotated"
    )
    return inline_kubeconfig(member, handle.server, ca_pem, cert, key)


def _events_of(records: LogRecords, event: str, cluster: str) -> list[dict[str, Any]]:
    return records.named(event, cluster=cluster)


async def test_a_rotated_credential_keeps_the_member_converging(
    fleet: Fleet, kro: KroEnv, controller: ControllerThread
) -> None:
    rgd = kro.rgd("rotate", "Rotate", {"name": "string", "value": "string"},
                  [_configmap("settings", "${schema.spec.name}")])  # fmt: skip
    rgd["spec"]["target"] = {"cluster": {"kubeconfigSecretName": "member-1"}}
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(kro.rgd_name("rotate"))
    gvr = await kro.gvr_of("Rotate")
    cm = f"rotate-{kro.suffix}"
    await kro.apply_instance("Rotate", "one", {"name": cm, "value": "before"})
    await _ready_at(kro, gvr, "one", fleet=fleet, member="member-1", cm=cm, value="before")
    original = await _member_object(fleet, "member-1", cm)
    assert original is not None
    seen: list[str] = []

    async def watch_status() -> None:
        while True:
            live = await kro.get(gvr, "one")
            bad = [c for c in (live.get("status") or {}).get("conditions") or []
                   if c.get("status") == "False"]  # fmt: skip
            seen.append(f"{state(live)} {_messages(live)}" if bad else state(live))
            await asyncio.sleep(0.1)

    watcher = asyncio.create_task(watch_status())
    secret = registry_secret("member-1", _rotated_kubeconfig(fleet, "member-1"), namespace=REGISTRY)
    try:
        with log_records() as records:
            live = await kro.client.get(SECRETS, "member-1", namespace=REGISTRY)
            live["data"] = secret["data"]
            await kro.client.update(SECRETS, live, namespace=REGISTRY)

            async def rotated() -> bool:
                return bool(_events_of(records, "cluster.rotated", "member-1"))

            await eventually(rotated, what="kro to take member-1's new credential", timeout_s=10)
            for value in ("after", "again"):
                await kro.apply_instance("Rotate", "one", {"name": cm, "value": value})
                took = await _ready_at(
                    kro, gvr, "one", fleet=fleet, member="member-1", cm=cm, value=value
                )
                print(f"member-1 edit after rotation converged in {took:.2f}s")
            unready = _events_of(records, "cluster.unready", "member-1")
            errors = [r for r in records.events if r.get("level") == "error"]
        assert not unready, unready
        assert not errors, errors
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
        await asyncio.to_thread(fleet.register)  # member-1's own Secret, as the session made it
    now = await _member_object(fleet, "member-1", cm)
    assert now is not None
    assert meta(now)["uid"] == meta(original)["uid"]  # updated in place, never recreated
    assert set(seen) <= {"ACTIVE", "IN_PROGRESS"}, sorted(set(seen))  # no False condition
    assert not await _warnings_about(kro.client, kro.namespace, "one")


# -- M-04/M-12: a cluster registered after the instance that targets it ----------------------


async def test_an_instance_converges_once_its_cluster_is_registered(
    fleet: Fleet, kro: KroEnv
) -> None:
    """M-04: a new registry Secret is usable within seconds, also by an instance that was
    waiting for it (M-12: told ClusterNotFound meanwhile)."""
    late = f"late-{kro.suffix}"
    # A computed target (a literal one naming no Ready cluster is a build error, M-12).
    rgd = kro.rgd("late", "Late", {"name": "string", "value": "string", "cluster": "string"},
                  [_targeted(_configmap("settings", "${schema.spec.name}"),
                             "${schema.spec.cluster}")])  # fmt: skip
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(kro.rgd_name("late"))
    gvr = await kro.gvr_of("Late")
    cm = f"late-{kro.suffix}"
    await kro.apply_instance("Late", "one", {"name": cm, "value": "waited", "cluster": late})

    def not_found(obj: dict[str, Any]) -> bool:
        return condition(obj, "Ready").get("reason") == "ClusterNotFound" and late in _messages(obj)

    await kro.wait_instance(gvr, "one", not_found, what="ClusterNotFound", timeout_s=TIMEOUT_S)
    secret = registry_secret(late, fleet.member("member-1").kubeconfig_text, namespace=REGISTRY)
    await asyncio.to_thread(apply_registry, fleet.hub, [secret])
    try:
        took = await _ready_at(
            kro, gvr, "one", fleet=fleet, member="member-1", cm=cm, value="waited",
            timeout_s=REGISTERED_S,
        )  # fmt: skip
        print(f"the waiting instance converged {took:.1f}s after its cluster's Secret")
    finally:
        with contextlib.suppress(NotFound):  # while its cluster is still there to tear down
            await kro.client.delete(gvr, "one", namespace=kro.namespace)
        with contextlib.suppress(AssertionError):
            await kro.wait_gone(gvr, "one", timeout_s=TIMEOUT_S)
        await asyncio.to_thread(fleet.hub.delete, f"/api/v1/namespaces/{REGISTRY}/secrets/{late}")
        await _delete_in_member(fleet, "member-1", cm)


# -- M-03: an exec plugin is refused and never runs ------------------------------------------


def _exec_kubeconfig(fleet: Fleet, marker: Path) -> str:
    """member-1's server and CA, and a user that is an exec plugin touching `marker`."""
    document = yaml.safe_load(fleet.member("member-1").kubeconfig_text)
    document["users"][0]["user"] = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": "/bin/sh",
            "args": ["-c", f"touch {marker}"],
            "interactiveMode": "Never",
        }
    }
    return str(yaml.safe_dump(document, sort_keys=False))


@pytest.fixture
def evil(fleet: Fleet, tmp_path: Path) -> Iterator[Path]:
    """A registry Secret `evil` whose kubeconfig runs a command; the marker it would touch."""
    marker = tmp_path / "exec-ran"
    secret = registry_secret("evil", _exec_kubeconfig(fleet, marker), namespace=REGISTRY)
    apply_registry(fleet.hub, [secret])
    try:
        yield marker
    finally:
        fleet.hub.delete(f"/api/v1/namespaces/{REGISTRY}/secrets/evil")


async def test_an_exec_plugin_secret_is_refused_and_never_runs(
    kro: KroEnv, controller: ControllerThread, evil: Path
) -> None:
    async def judged() -> bool:  # before the instance: see the M-04/M-12 drill above
        assert controller.app is not None
        assert controller.app.members is not None
        member = controller.app.members.registry.get("evil")
        return member is not None and member.refused == "ExecPlugin"

    await eventually(judged, what="kro's registry refusing evil", timeout_s=TIMEOUT_S)
    rgd = kro.rgd("evil", "Evil", {"name": "string", "value": "string", "cluster": "string"},
                  [_targeted(_configmap("settings", "${schema.spec.name}"),
                             "${schema.spec.cluster}")])  # fmt: skip
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(kro.rgd_name("evil"))
    gvr = await kro.gvr_of("Evil")
    await kro.apply_instance(
        "Evil", "one", {"name": f"evil-{kro.suffix}", "value": "x", "cluster": "evil"}
    )

    def refused(obj: dict[str, Any]) -> bool:
        return any(
            c.get("reason") == "ClusterNotFound"
            and "evil" in str(c.get("message"))
            and "ExecPlugin" in str(c.get("message"))
            for c in (obj.get("status") or {}).get("conditions") or []
        )

    found = await kro.wait_instance(gvr, "one", refused, what="ClusterNotFound (ExecPlugin)",
                                    timeout_s=TIMEOUT_S)  # fmt: skip
    print(f"instance targeting evil: {state(found)}: {_messages(found)}")
    assert state(found) != "ACTIVE"
    assert not await asyncio.to_thread(evil.exists), "the exec plugin ran on the hub"
