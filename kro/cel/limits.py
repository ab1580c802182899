"""kro.cel.limits: how much one evaluation of one expression may cost.

Upstream kro puts no limit on its CEL evaluations. kro-py runs every evaluation on the
controller's one event loop, and the engine holds the GIL while it evaluates, so one
expression that runs for seconds or allocates gigabytes stalls or kills every reconcile and
the health endpoints with it. These limits bound what an RGD author can make one evaluation
do. They follow Kubernetes' own CEL limits (`k8s.io/apiserver/pkg/apis/cel/config.go`) where
Kubernetes has an equivalent:

- a value no larger than the API server's largest request (`MaxRequestSizeBytes`, 3 MiB):
  nothing larger can be read from or written to an object, so no function needs to make one;
- roughly the time Kubernetes' per-call cost limit stands for (`PerCallLimit`, "roughly 0.1
  second for each expression validation call").

The rest are kro-py's: a cap on everything kro's functions produce in one evaluation, and
on how much evaluations may raise the process's resident memory. Upstream v0.10 added one
limit of its own, off by default: a cost budget in CEL's runtime cost units
(`--cel-cost-limit`, V-10), counted as `runtime_cost` describes. `budget` enforces them;
docs/compatibility.md ("Limits on expressions") lists them for users.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

MIB: Final = 1024 * 1024
ENGINE_MAX_ITERATIONS: Final = 10_000
"""cel-expr-python 0.1.3 stops an evaluation after this many comprehension iterations in
total (its `comprehension_max_iterations`, not settable through the binding). Upstream has no
such cap: an expression it stops is evaluated again with each inner loop in an evaluation of
its own (`_engine_compat.split`), so only a single loop over more items, or nested loops
whose values cannot be handed between evaluations exactly, still stop here."""


@dataclass(frozen=True, kw_only=True, slots=True)
class EvaluationLimits:
    """Per-evaluation limits; exceeding one fails the expression with a message naming it.

    time_budget_s: wall time one evaluation may use (default 0.1 s, Kubernetes'
        PerCallLimit). Checked between comprehension iterations, between `cel.bind` steps
        and on every call of a kro function; a single engine-native operation cannot be
        interrupted. None disables it (tests, offline tools).
    max_value_bytes: the largest string, bytes, list or map a kro function may return,
        by estimated serialized size (default 3 MiB, Kubernetes' MaxRequestSizeBytes). Also
        bounds `random.seededString` lengths and `lists.range` sizes before they are built.
    max_produced_bytes: the total size of all values kro's functions return during one
        evaluation (default 16 MiB), so a comprehension cannot call a function 10,000 times
        for 3 MiB each.
    memory_budget_bytes: how far the evaluations of one Activation (they share the engine's
        arena, freed with the Activation) may raise the process's resident memory (default
        64 MiB; a map over a full 1000-item forEach collection needs about 20 MiB with this
        engine). Checked with the time budget; None disables it.
    cost_limit: the most CEL runtime cost units one evaluation may use (`--cel-cost-limit`,
        V-10; upstream's default 0 is None here: no limit). Its fixed part is checked before
        the evaluation starts, every comprehension iteration as it runs.
    """

    time_budget_s: float | None = 0.1
    max_value_bytes: int = 3 * MIB
    max_produced_bytes: int = 16 * MIB
    memory_budget_bytes: int | None = 64 * MIB
    cost_limit: int | None = None


DEFAULT_LIMITS: Final = EvaluationLimits()


def cost_limit_message(limit: int, cost: int) -> str:
    """Why an evaluation stopped at `cost` units; cel-go's words, then kro's numbers."""
    return (
        "operation cancelled: actual cost limit exceeded (the CEL cost limit is "
        f"{limit}; this evaluation reached {cost})"
    )


def describe_bytes(size: int) -> str:
    """`3MiB`, `512KiB` or `100 bytes`: limits as a person reads them in a message."""
    if size >= MIB and size % MIB == 0:
        return f"{size // MIB}MiB"
    if size >= 1024 and size % 1024 == 0:
        return f"{size // 1024}KiB"
    return f"{size} bytes"


def describe_seconds(seconds: float) -> str:
    """`100ms` or `2s`."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    return f"{seconds:g}s"
