"""One hostile expression cannot raise kro's memory past the budget of one evaluation.

`kro controller` runs as a child process of its own (the in-process harness shares the test's
heap, and a process of its own is what a pod's memory limit applies to). Two RGDs render
`string(lists.range(n).map(i, lists.range(n).map(j, i + j)).size())` and a list of `n` ranges
of `n` into a ConfigMap: with a small `n` they render, with a large one the engine would build
lists of lists (and, in this engine, copy the growing result on every step) until the process
dies. The test measures the controller's resident memory once it has reconciled a healthy
instance of each kind (its base), resets the kernel's peak-RSS mark, creates the hostile
instances, waits until each has failed with a clean condition and kro has retried it several
times, and reads the peak: it must stay within the memory budget of one evaluation
(`EvaluationLimits.memory_budget_bytes`) above the base. The healthy instances keep
converging meanwhile.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kro_harness import CONFIGMAPS, KroEnv, condition, is_ready, process_fixtures, state, wait_for

from kro.cel.limits import DEFAULT_LIMITS, MIB
from kro.testing.kroprocess import KroProcess

# Debug logs carry one `dynamic.reconcile` event per reconcile; retries come quickly.
spawn, kro = process_fixtures("--log-level=debug", "--instance-requeue-interval=100ms")

NESTED = (
    "string(lists.range(schema.spec.n).map(i, lists.range(schema.spec.n).map(j, i + j)).size())"
)
WIDE = "string(lists.range(schema.spec.n).map(i, lists.range(schema.spec.n)).size())"
# (field, expression, hostile sizes): the expression, once with the largest range kro
# builds and once with one that loops longer; and lists of large ranges, which allocate fast
# enough for the memory budget to stop them before the time budget does.
CASES = (("pairs", NESTED, (150_000, 5_000)), ("rows", WIDE, (150_000,)))
RETRIES = 5  # reconciles of each hostile instance after its first failure


def _status_bytes(pid: int, field: str) -> int:
    """A `kB` line of /proc/<pid>/status (VmRSS: resident now, VmHWM: the peak), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name == field:
            return int(value.split()[0]) * 1024
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def _reset_peak(pid: int) -> None:
    """Make VmHWM start again from the current RSS (clear_refs value 5, Linux 4.0+)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def _reconciles(process: KroProcess, name: str, since: int) -> int:
    return sum(1 for r in process.find("dynamic.reconcile", since) if r.get("name") == name)


def _rgd(kro: KroEnv, field: str, expression: str) -> dict[str, Any]:
    return kro.rgd(
        f"{field}-ranges",
        f"{field.capitalize()}Ranges",
        {"n": "integer | default=8"},
        [
            {
                "id": "config",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}"},
                    "data": {field: "${" + expression + "}"},
                },
            }
        ],
    )


async def test_hostile_instances_stay_within_the_memory_budget(kro: KroEnv, spawn: Any) -> None:
    budget = DEFAULT_LIMITS.memory_budget_bytes
    assert budget is not None
    process: KroProcess = spawn("kro")
    try:
        await _hostile_instances_stay_within_the_memory_budget(kro, process, budget)
    finally:
        await kro.cleanup()  # while kro runs, so that it deletes the children


async def _hostile_instances_stay_within_the_memory_budget(
    kro: KroEnv, process: KroProcess, budget: int
) -> None:
    kinds = []
    for field, expression, _ in CASES:
        rgd = _rgd(kro, field, expression)
        await kro.apply_rgd(rgd)
        await kro.wait_rgd_active(rgd["metadata"]["name"], generation=False)
        kind = rgd["spec"]["schema"]["kind"]
        gvr = await kro.gvr_of(kind)
        healthy = f"healthy-{field}"
        await kro.apply_instance(kind, healthy, {"n": 8})
        await kro.wait_instance(gvr, healthy, is_ready, timeout_s=90)
        assert (await kro.get(CONFIGMAPS, healthy))["data"] == {field: "8"}
        kinds.append((kind, gvr))

    base = _status_bytes(process.pid, "VmRSS")
    _reset_peak(process.pid)
    messages: dict[str, str] = {}
    for (field, expression, sizes), (kind, gvr) in zip(CASES, kinds, strict=True):
        for index, n in enumerate(sizes):
            name = f"hostile-{field}-{index}"
            since = process.offset()
            await kro.apply_instance(kind, name, {"n": n})

            def failed(live: dict[str, Any], expression: str = expression) -> bool:
                message = str(condition(live, "ResourcesReady").get("message", ""))
                return state(live) == "ERROR" and expression in message

            live = await kro.wait_instance(gvr, name, failed, what=f"{name} failing")
            messages[name] = str(condition(live, "ResourcesReady")["message"])

            async def retried(name: str = name, since: int = since) -> bool:
                return _reconciles(process, name, since) > RETRIES

            await wait_for(retried, what=f"{RETRIES} retries of {name}", timeout_s=120)

    # kro still serves the healthy instances while the hostile ones keep failing.
    for field, _, _ in CASES:
        kind = f"{field.capitalize()}Ranges"
        await kro.apply_instance(kind, f"healthy-{field}", {"n": 3})

        async def converged(name: str = f"healthy-{field}", field: str = field) -> bool:
            configmap = await kro.get(CONFIGMAPS, name)
            return configmap.get("data") == {field: "3"}

        await wait_for(converged, what=f"healthy-{field} converged on n=3")
    peak = _status_bytes(process.pid, "VmHWM")
    print(
        f"\ncontroller RSS: base {base / MIB:.0f} MiB, peak {peak / MIB:.0f} MiB "
        f"(+{(peak - base) / MIB:.0f} MiB; budget {budget / MIB:.0f} MiB)\n"
        + "\n".join(f"{name}: {message}" for name, message in messages.items())
    )
    assert process.alive()
    assert all("evaluation budget exceeded" in m for m in messages.values()), messages
    assert peak <= base + budget, (
        f"peak RSS {peak / MIB:.0f} MiB exceeds base {base / MIB:.0f} MiB + budget "
        f"{budget / MIB:.0f} MiB"
    )
