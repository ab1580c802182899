"""kro.testing.chaos: a crash storm against a real `kro controller` process, and its verdict.

kro keeps no state outside the cluster, so any `kill -9` at any moment must leave nothing a
restarted process cannot finish. The storm checks exactly that, as a user would see it:

1. an RGD of two ConfigMaps (the second reads the first, so there is an order to interrupt) and
   `instances` instances of it, created all at once;
2. `kills` times, at random moments: `kill -9` the controller and start a new one at once (what
   the kubelet does), while `updates` instances get a new spec and `deletes` are deleted, spread
   over the storm so that changes land before, during and right after each crash;
3. after the last kill, wait until everything has converged, then count what a user would call
   a bug: duplicates (two objects for one resource of one instance), orphans (children whose
   instance is gone), stuck finalizers (deleted instances still present), lost updates
   (children not matching their instance's spec) and instances never Ready.

`e2e/test_crash_storm.py` runs a short storm in `make test`; `bench/bench_chaos.py` a long one.
The random moments come from a seed that is reported, so a failing storm can be replayed.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from kro.api.names import LABEL_INSTANCE_NAME, LABEL_NODE_ID
from kro.runtime.client import Client
from kro.runtime.errors import KubeError, NotFound
from kro.runtime.gvk import GVK, GVR
from kro.testing.crds import install_crds
from kro.testing.kroprocess import KroProcess

CONFIGMAPS = GVR("", "v1", "configmaps")
RGDS = GVR("kro.run", "v1alpha1", "resourcegraphdefinitions")
CRDS = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")
KIND = "Stormy"
VERSION = "v1alpha1"
FIELD_MANAGER = "kro-chaos"


@dataclass(slots=True)
class StormResult:
    """What the storm did and what it left behind; every count after `kills` must be 0."""

    seed: int
    instances: int
    kills: int
    updated: int
    deleted: int
    converge_s: float = 0.0
    duplicates: int = 0
    orphans: int = 0
    stuck_finalizers: int = 0
    lost_updates: int = 0
    not_ready: int = 0
    problems: list[str] = field(default_factory=list)

    def failures(self) -> int:
        return (
            self.duplicates + self.orphans + self.stuck_finalizers + self.lost_updates
            + self.not_ready
        )  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def storm_rgd(name: str, group: str) -> dict[str, Any]:
    """Two ConfigMaps per instance; `second` depends on `first`, so order matters."""
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "metadata": {"name": name},
        "spec": {
            "schema": {
                "apiVersion": VERSION,
                "kind": KIND,
                "group": group,
                "spec": {"value": "string"},
                "status": {"copied": "${second.data.value}"},
            },
            "resources": [
                {
                    "id": "first",
                    "template": {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "${schema.metadata.name}-first"},
                        "data": {"value": "${schema.spec.value}"},
                    },
                },
                {
                    "id": "second",
                    "template": {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "${schema.metadata.name}-second"},
                        "data": {"value": "${first.data.value}-second"},
                    },
                },
            ],
        },
    }


class CrashStorm:
    """One storm in one namespace; `start_controller` makes a fresh, started KroProcess."""

    def __init__(
        self,
        client: Client,
        namespace: str,
        group: str,
        start_controller: Callable[[], KroProcess],
        *,
        seed: int | None = None,
        log: Callable[[str], None] = print,
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.group = group
        self.rgd_name = f"storm-{namespace}"
        self._start = start_controller
        self.seed = seed if seed is not None else random.SystemRandom().randrange(2**31)
        self._rng = random.Random(self.seed)
        self._log = log
        self.controller: KroProcess | None = None
        self.gvr = GVR(group, VERSION, "stormies")
        self.spec: dict[str, str] = {}  # instance name -> the value it should have now
        self.deleted: set[str] = set()

    # -- phases ----------------------------------------------------------------------------------

    async def run(
        self, *, instances: int, kills: int, updates: int, deletes: int, timeout_s: float = 300.0
    ) -> StormResult:
        """The crash storm: `kills` times, at a random moment, kill -9 and restart kro."""
        return await self.run_faults(
            [self.kill_and_restart] * kills,
            instances=instances,
            updates=updates,
            deletes=deletes,
            timeout_s=timeout_s,
        )

    async def kill_and_restart(self) -> None:
        """kill -9 the controller, then start a new one at once (what the kubelet does)."""
        assert self.controller is not None
        await asyncio.to_thread(self.controller.kill9)
        self.controller = self._start()

    async def run_faults(
        self,
        faults: Sequence[Callable[[], Awaitable[None]]],
        *,
        instances: int,
        updates: int,
        deletes: int,
        timeout_s: float = 300.0,
    ) -> StormResult:
        """Create `instances`, then run each fault at a random moment while `updates` and
        `deletes` are spread over the faults (each step's share lands right after its fault);
        then wait for convergence and judge."""
        kills = sum(1 for f in faults if f == self.kill_and_restart)
        result = StormResult(self.seed, instances, kills, updates, deletes)
        self.controller = self._start()
        await self._install()
        names = [f"i-{n:04d}" for n in range(instances)]
        await self._gather(self._apply(name, "v0") for name in names)
        self._log(f"storm seed={self.seed}: {instances} instances created, {len(faults)} faults")

        picks = self._rng.sample(names, updates + deletes)
        to_update, to_delete = picks[:updates], picks[updates:]
        steps = max(len(faults), 1)
        for step in range(steps):
            await asyncio.sleep(self._rng.uniform(0.3, 2.5))  # a random moment mid-reconcile
            if step < len(faults):
                await faults[step]()
            batch = slice(step * updates // steps, (step + 1) * updates // steps)
            await self._gather(self._apply(name, f"v{step + 1}") for name in to_update[batch])
            batch = slice(step * deletes // steps, (step + 1) * deletes // steps)
            await self._gather(self._delete(name) for name in to_delete[batch])
        last_fault = time.monotonic()
        self._log("faults over; waiting for convergence")
        await self._converge(result, timeout_s)
        result.converge_s = round(time.monotonic() - last_fault, 2)
        return result

    async def _install(self) -> None:
        await install_crds(self.client)
        await self.client.apply(
            RGDS, storm_rgd(self.rgd_name, self.group), field_manager=FIELD_MANAGER, force=True
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                self.gvr = (
                    await self.client.mapper.resource_for(GVK(self.group, VERSION, KIND))
                ).gvr
                await self.client.list(self.gvr, namespace=self.namespace, limit=1)
                return
            except KubeError:
                self.client.mapper.invalidate()
                await asyncio.sleep(0.2)
        raise AssertionError(f"the storm's CRD was never served:\n{self._tail()}")

    async def _apply(self, name: str, value: str) -> None:
        body = {
            "apiVersion": f"{self.group}/{VERSION}",
            "kind": KIND,
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": {"value": value},
        }
        await self.client.apply(
            self.gvr, body, field_manager=FIELD_MANAGER, force=True, namespace=self.namespace
        )
        self.spec[name] = value

    async def _delete(self, name: str) -> None:
        with contextlib.suppress(NotFound):
            await self.client.delete(self.gvr, name, namespace=self.namespace)
        self.deleted.add(name)
        self.spec.pop(name, None)

    @staticmethod
    async def _gather(calls: Any) -> None:
        await asyncio.gather(*calls)

    async def cleanup(self, timeout_s: float = 90.0) -> None:
        """Delete every instance (a controller must be running to remove children), then the
        RGD, and wait until it is gone, then its CRD: an RGD left terminating when the
        controller stops, or a generated kind left served, would be taken up by whichever
        controller runs next on the cluster."""
        deadline = time.monotonic() + timeout_s
        with contextlib.suppress(KubeError):
            instances, _ = await self.client.list_all(self.gvr, namespace=self.namespace)
            await self._gather(self._delete(i["metadata"]["name"]) for i in instances)
            while time.monotonic() < deadline:
                left, _ = await self.client.list_all(self.gvr, namespace=self.namespace)
                if not left:
                    break
                await asyncio.sleep(0.5)
        with contextlib.suppress(NotFound):
            await self.client.delete(RGDS, self.rgd_name)
            while time.monotonic() < deadline:
                await self.client.get(RGDS, self.rgd_name)  # NotFound ends the wait
                await asyncio.sleep(0.5)
        # The generated CRD outlives its RGD unless kro runs with --allow-crd-deletion; left
        # behind, a later controller finds the kind and asks for its instances.
        with contextlib.suppress(NotFound):
            await self.client.delete(CRDS, f"{self.gvr.resource}.{self.gvr.group}")

    # -- the verdict -----------------------------------------------------------------------------

    async def _converge(self, result: StormResult, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            self._judge(result, *(await self._observe()))
            if result.failures() == 0 or time.monotonic() >= deadline:
                return
            await asyncio.sleep(0.5)

    async def _observe(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        instances, _ = await self.client.list_all(self.gvr, namespace=self.namespace)
        children, _ = await self.client.list_all(
            CONFIGMAPS, namespace=self.namespace, label_selector=LABEL_INSTANCE_NAME
        )
        return instances, children

    def _judge(
        self, result: StormResult, instances: list[dict[str, Any]], children: list[dict[str, Any]]
    ) -> None:
        problems: list[str] = []
        live = {i["metadata"]["name"]: i for i in instances}
        per_node: Counter[tuple[str, str]] = Counter()
        values: dict[tuple[str, str], str] = {}
        orphans = 0
        for child in children:
            labels = child["metadata"].get("labels") or {}
            owner, node = labels.get(LABEL_INSTANCE_NAME, ""), labels.get(LABEL_NODE_ID, "")
            if owner not in live:
                orphans += 1
                problems.append(f"orphan {child['metadata']['name']} of {owner}")
                continue
            per_node[(owner, node)] += 1
            values[(owner, node)] = str((child.get("data") or {}).get("value"))
        result.orphans = orphans
        result.duplicates = sum(n - 1 for n in per_node.values() if n > 1)
        result.stuck_finalizers = sum(1 for name in live if name in self.deleted)
        lost = not_ready = 0
        for name, value in self.spec.items():
            want = {"first": value, "second": f"{value}-second"}
            got = {node: values.get((name, node)) for node in want}
            if got != want:
                lost += 1
                problems.append(f"{name}: children {got}, want {want}")
            obj = live.get(name)
            if obj is None or not _ready(obj):
                not_ready += 1
                problems.append(f"{name}: not Ready ({_state(obj)})")
        result.lost_updates, result.not_ready = lost, not_ready
        result.problems = problems[:20]

    def _tail(self) -> str:
        return self.controller.tail() if self.controller is not None else ""


def _ready(obj: dict[str, Any]) -> bool:
    status = obj.get("status") or {}
    generation = obj["metadata"].get("generation")
    return status.get("state") == "ACTIVE" and any(
        c.get("type") == "Ready"
        and c.get("status") == "True"
        and c.get("observedGeneration") == generation
        for c in status.get("conditions") or []
    )


def _state(obj: dict[str, Any] | None) -> str:
    if obj is None:
        return "missing"
    return str((obj.get("status") or {}).get("state") or "no status")
