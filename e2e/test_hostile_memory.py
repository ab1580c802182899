"""One hostile expression cannot raise kro's memory past the budget of one evaluation.

`kro controller` runs as a child process of its own (the in-process harness shares the test's
heap, and a process of its own is what a pod's memory limit applies to). An RGD renders
`string(lists.range(n).map(i, lists.range(n).map(j, i + j)).size())` into a ConfigMap: with a
small `n` it renders, with a large one the engine would build lists of lists (and, in this
engine, copy the growing result on every step) until the process dies. The test measures the
controller's resident memory once it has reconciled a healthy instance of the same kind (its
base), resets the kernel's peak-RSS mark, creates the hostile instance, waits until it has
failed with a clean condition and kro has retried it several times, and reads the peak: it
must stay within the memory budget of one evaluation (`EvaluationLimits.memory_budget_bytes`)
above the base. The healthy instance keeps converging meanwhile.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kro_harness import CONFIGMAPS, KroEnv, condition, is_ready, process_fixtures, state, wait_for

from kro.cel.limits import DEFAULT_LIMITS, MIB
from kro.testing.kroprocess import KroProcess

spawn, kro = process_fixtures("--log-level=debug")

NESTED = (
    "string(lists.range(schema.spec.n).map(i, lists.range(schema.spec.n).map(j, i + j)).size())"
)
HOSTILE_SIZES = (150_000, 5_000)  # the largest range kro builds, and one that loops longer
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


async def test_a_hostile_instance_stays_within_the_memory_budget(kro: KroEnv, spawn: Any) -> None:
    budget = DEFAULT_LIMITS.memory_budget_bytes
    assert budget is not None
    process: KroProcess = spawn("kro")
    rgd = kro.rgd(
        "nested-ranges",
        "NestedRanges",
        {"n": "integer | default=8"},
        [
            {
                "id": "config",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}"},
                    "data": {"pairs": "${" + NESTED + "}"},
                },
            }
        ],
    )
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"], generation=False)
    gvr = await kro.gvr_of("NestedRanges")
    await kro.apply_instance("NestedRanges", "healthy", {"n": 8})
    await kro.wait_instance(gvr, "healthy", is_ready, timeout_s=90)
    assert (await kro.get(CONFIGMAPS, "healthy"))["data"] == {"pairs": "8"}

    base = _status_bytes(process.pid, "VmRSS")
    _reset_peak(process.pid)
    messages: dict[str, str] = {}
    for index, n in enumerate(HOSTILE_SIZES):
        name = f"hostile-{index}"
        since = process.offset()
        await kro.apply_instance("NestedRanges", name, {"n": n})

        def failed(live: dict[str, Any]) -> bool:
            message = str(condition(live, "ResourcesReady").get("message", ""))
            return state(live) == "ERROR" and NESTED in message

        live = await kro.wait_instance(gvr, name, failed, what=f"{name} failing")
        messages[name] = str(condition(live, "ResourcesReady")["message"])

        async def retried(name: str = name, since: int = since) -> bool:
            return _reconciles(process, name, since) > RETRIES

        await wait_for(retried, what=f"{RETRIES} retries of {name}", timeout_s=120)

    await kro.apply_instance("NestedRanges", "healthy", {"n": 3})

    async def converged() -> bool:
        configmap = await kro.get(CONFIGMAPS, "healthy")
        return configmap.get("data") == {"pairs": "3"}

    await wait_for(converged, what="the healthy instance converged on n=3")
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
