"""Hostile expressions on the real control plane: RGD authors must not stall or exhaust kro.

Three RGDs carry the expressions that used to freeze the controller (a catastrophic regex, a
30-million-character `random.seededString`, nested comprehensions over large lists) and a
fourth is healthy. While their instances reconcile, a thread probes /healthz every 0.1 s:
every answer must be 200 and come within a second. The regex now runs on RE2 and simply
works; the other two report the limit they hit in ResourcesReady, naming the expression;
and the healthy instance keeps converging on every change of its spec.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from kro_harness import (
    CONFIGMAPS,
    ControllerThread,
    KroEnv,
    condition,
    is_ready,
    kro_fixtures,
    state,
    wait_for,
)

PROBE_INTERVAL_S = 0.1
MAX_PROBE_S = 1.0
SPEC = {"text": "string", "n": "integer | default=8", "items": "[]string"}
REGEX = 'schema.spec.text.find("(a+)+$")'
SEEDED = "random.seededString(schema.spec.n, schema.metadata.uid)"
NESTED = (
    "string(schema.spec.items.map(a, schema.spec.items.map(b, "
    "schema.spec.items.map(c, a + b + c))).size())"
)


controller, kro = kro_fixtures()


@dataclass
class HealthProbe:
    """GET /healthz every PROBE_INTERVAL_S on a thread of its own; keeps status and latency."""

    address: str
    answers: list[tuple[int, float]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> HealthProbe:
        self._thread = threading.Thread(target=self._run, name="healthz-probe", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        url = f"http://{self.address}/healthz"
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                with urllib.request.urlopen(url, timeout=10) as response:
                    self.answers.append((response.status, time.monotonic() - started))
            except OSError as error:
                self.failures.append(f"{type(error).__name__}: {error}")
            self._stop.wait(PROBE_INTERVAL_S)

    @property
    def slowest_s(self) -> float:
        return max((latency for _, latency in self.answers), default=0.0)


def _configmap_rgd(kro: KroEnv, name: str, kind: str, data: dict[str, str]) -> dict[str, Any]:
    return kro.rgd(
        name,
        kind,
        SPEC,
        [
            {
                "id": "config",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}"},
                    "data": data,
                },
            }
        ],
    )


async def _failed_with(kro: KroEnv, kind: str, name: str, *parts: str) -> dict[str, Any]:
    """The instance once it is in ERROR with every one of `parts` in ResourcesReady."""
    gvr = await kro.gvr_of(kind)

    def failed(live: dict[str, Any]) -> bool:
        message = str(condition(live, "ResourcesReady").get("message", ""))
        return state(live) == "ERROR" and all(p in message for p in parts)

    return await kro.wait_instance(gvr, name, failed, what=f"{kind} {name} failing: {parts}")


async def test_hostile_expressions_fail_alone_while_kro_stays_responsive(
    kro: KroEnv, controller: ControllerThread
) -> None:
    rgds = [
        _configmap_rgd(kro, "healthy", "Healthy", {"greeting": "hello ${schema.spec.text}"}),
        _configmap_rgd(kro, "regex", "CatastrophicRegex", {"m": "${" + REGEX + "}"}),
        _configmap_rgd(kro, "huge", "HugeString", {"password": "${" + SEEDED + "}"}),
        _configmap_rgd(kro, "nested", "NestedLoops", {"pairs": "${" + NESTED + "}"}),
    ]
    with HealthProbe(controller.metrics_address) as probe:
        for rgd in rgds:
            await kro.apply_rgd(rgd)
        for rgd in rgds:
            await kro.wait_rgd_active(rgd["metadata"]["name"])

        await kro.apply_instance("CatastrophicRegex", "regex", {"text": "a" * 30 + "!"})
        await kro.apply_instance("HugeString", "huge", {"text": "x", "n": 30_000_000})
        await kro.apply_instance("NestedLoops", "nested", {"text": "x", "items": ["x" * 10] * 100})
        await kro.apply_instance("Healthy", "healthy", {"text": "world"})

        huge = await _failed_with(
            kro,
            "HugeString",
            "huge",
            SEEDED,
            "random.seededString: length 30000000 exceeds the limit of 3145728",
        )
        nested = await _failed_with(
            kro, "NestedLoops", "nested", NESTED, "evaluation budget exceeded"
        )
        regex = await kro.wait_instance(await kro.gvr_of("CatastrophicRegex"), "regex")
        assert (await kro.get(CONFIGMAPS, "regex"))["data"] == {"m": ""}

        healthy_gvr = await kro.gvr_of("Healthy")
        await kro.wait_instance(healthy_gvr, "healthy")
        for text in ("again", "and again"):  # keeps reconciling while the others keep failing
            await kro.apply_instance("Healthy", "healthy", {"text": text})

            async def converged(expected: str = f"hello {text}") -> bool:
                configmap = await kro.get(CONFIGMAPS, "healthy")
                live = await kro.get(healthy_gvr, "healthy")
                return configmap.get("data") == {"greeting": expected} and is_ready(live)

            await wait_for(converged, what=f"healthy instance converged on {text!r}")

    assert probe.failures == []
    assert probe.answers, "the probe never got an answer"
    assert {status for status, _ in probe.answers} == {200}
    assert probe.slowest_s < MAX_PROBE_S, f"/healthz took {probe.slowest_s:.2f}s"
    assert condition(huge, "ResourcesReady")["status"] == "False"
    assert condition(nested, "ResourcesReady")["status"] == "False"
    assert is_ready(regex)
    print(
        f"\n/healthz: {len(probe.answers)} answers, slowest {probe.slowest_s * 1000:.0f} ms; "
        f"huge: {condition(huge, 'ResourcesReady')['message']}\n"
        f"nested: {condition(nested, 'ResourcesReady')['message']}"
    )
