"""kro.cel.budget: the running account of one evaluation against its `EvaluationLimits`.

`CompiledExpression.evaluate` opens a `Budget` for the calling thread, runs the engine and
closes it. While the engine runs, only Python code that the engine calls back can look at
the clock or the memory: kro's library functions (`library` wraps each one with `enter` and
`charge`) and the hooks `instrument` plants in every comprehension loop and `cel.bind`
(`tick`). Whatever fails raises `LimitExceeded`; the engine turns the exception into an
error value, which `results.classify` reports as an `ExpressionError` whose message names
the limit. The budget is per thread because an executor thread may evaluate while the event
loop thread is inside a callback.

Outside an evaluation (a library function called directly) only the per-value size limit
applies, with the default limits.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Final

from google.protobuf.message import Message

from kro.cel.limits import (
    DEFAULT_LIMITS,
    EvaluationLimits,
    cost_limit_message,
    describe_bytes,
    describe_seconds,
)
from kro.cel.memory import resident_bytes

BUDGET_EXCEEDED: Final = "evaluation budget exceeded"
"""Prefix of every message about a per-evaluation budget (time, memory, produced bytes,
iterations); per-value size limits name the function instead."""

_SCALAR_BYTES: Final = 8
_ENTRY_BYTES: Final = 8
_UNCOUNTED_BYTES: Final = 256
_MEMORY_EVERY: Final = 8


class LimitExceeded(ValueError):
    """An evaluation went over one of its limits. Never escapes kro.cel: raised inside a
    callback, it becomes the evaluation's error value."""


class MemoryAccount:
    """What the evaluations of one Activation have added to resident memory so far.

    The engine allocates an evaluation's values in the Activation's arena and frees them
    only with the Activation, so memory adds up across the evaluations of one reconcile;
    measuring each evaluation on its own would let every one of them add the whole budget
    again. Each budgeted evaluation that reached a memory check adds its growth to
    `carried` when it ends. What happens between evaluations (the Activation converting a
    bound object, other coroutines of the controller) is not counted.
    """

    __slots__ = ("carried",)

    def __init__(self) -> None:
        self.carried = 0


class Budget:
    """What one evaluation has used so far.

    deadline: monotonic time after which the evaluation fails (None: no time budget).
    produced: estimated bytes returned by kro functions so far.
    memory: the Activation's account, for the memory budget.
    memory_start: resident memory at this evaluation's first memory check (taken lazily:
        most evaluations never reach a comprehension and so never pay for the system call).
    memory_close: the growth has passed half the budget: memory is checked on every tick
        from then on.
    memory_grown: the growth at the last check. What was added since is what the next
        stretch between two checks may add again, so an evaluation stops when that would
        take it past the budget rather than one stretch after.
    ticks: comprehension iterations and bindings so far.
    cost: CEL runtime cost units so far (`runtime_cost`), when there is a cost limit.
    exceeded: the first limit this evaluation went over. It sticks: an error inside a
        comprehension does not stop the comprehension around it (CEL carries the error in
        the accumulator and keeps iterating), so every later hook fails at once instead of
        granting each outer iteration a fresh allowance.
    """

    __slots__ = (
        "cost",
        "deadline",
        "exceeded",
        "limits",
        "memory",
        "memory_close",
        "memory_grown",
        "memory_start",
        "produced",
        "ticks",
    )

    def __init__(self, limits: EvaluationLimits, memory: MemoryAccount, cost: int = 0) -> None:
        self.limits = limits
        self.cost = cost
        budget_s = limits.time_budget_s
        self.deadline = None if budget_s is None else time.monotonic() + budget_s
        self.produced = 0
        self.memory = memory
        self.memory_start: int | None = None
        self.memory_close = False
        self.memory_grown = 0
        self.ticks = 0
        self.exceeded: str | None = None

    def fail(self, message: str) -> LimitExceeded:
        """Remember `message` as this evaluation's verdict; the error to raise for it.

        A new exception each time: re-raising one object would grow its traceback.
        """
        if self.exceeded is None:
            self.exceeded = message
        return LimitExceeded(self.exceeded)

    def timeout(self, where: str) -> LimitExceeded:
        seconds = self.limits.time_budget_s or 0.0
        return self.fail(
            f"{BUDGET_EXCEEDED}: the expression ran longer than the time budget of "
            f"{describe_seconds(seconds)} ({where})"
        )

    def check_memory(self, where: str, *, extra: int = 0) -> None:
        """Fail if the evaluation has raised resident memory past its budget, or would with
        `extra` more bytes (a value the engine is about to build in one step)."""
        limit = self.limits.memory_budget_bytes
        if limit is None:
            return
        resident = resident_bytes()
        if resident is None:
            return
        if self.memory_start is None:
            self.memory_start = resident
        grown = resident - self.memory_start + self.memory.carried
        step = grown - self.memory_grown
        self.memory_grown = grown
        self.memory_close = grown > limit // 2
        if grown + max(extra, step) > limit:
            raise self.fail(
                f"{BUDGET_EXCEEDED}: the expression raised the controller's memory use by "
                f"more than the memory budget of {describe_bytes(limit)} ({where})"
            )

    def spend(self, units: int) -> None:
        """Add `units` of CEL runtime cost; fail once past the cost limit (V-10)."""
        limit = self.limits.cost_limit
        if limit is None:
            return
        self.cost += units
        if self.cost > limit:
            raise self.fail(f"{BUDGET_EXCEEDED}: {cost_limit_message(limit, self.cost)}")

    def charge(self, function: str, size: int) -> None:
        self.produced += size
        limit = self.limits.max_produced_bytes
        if self.produced > limit:
            raise self.fail(
                f"{BUDGET_EXCEEDED}: values returned by kro functions in one evaluation "
                f"exceed {describe_bytes(limit)} (at {function})"
            )


_local: Final = threading.local()


def begin(limits: EvaluationLimits, memory: MemoryAccount, cost: int = 0) -> Budget | None:
    """Open a budget for this thread's next evaluation, `cost` units already spent (the
    expression's fixed cost); returns the one to restore."""
    previous: Budget | None = getattr(_local, "budget", None)
    _local.budget = Budget(limits, memory, cost)
    return previous


def end(previous: Budget | None) -> bool:
    """Close this thread's budget (its memory growth goes to the Activation's account) and
    restore `previous`. True if the evaluation went over a limit: what it allocated is
    garbage the caller should free at once (`Activation.release`)."""
    budget: Budget | None = getattr(_local, "budget", None)
    if budget is not None and budget.memory_start is not None:
        resident = resident_bytes()
        if resident is not None:
            budget.memory.carried += max(0, resident - budget.memory_start)
    _local.budget = previous
    return budget is not None and budget.exceeded is not None


def rewind_cost(cost: int) -> None:
    """Set this thread's evaluation back to `cost` units spent: the expression is evaluated
    again (`engine`, split form) and each attempt is charged what it costs, not the sum."""
    budget: Budget | None = getattr(_local, "budget", None)
    if budget is not None:
        budget.cost = cost


def current_limits() -> EvaluationLimits:
    """The limits of this thread's evaluation, or the defaults outside one."""
    budget: Budget | None = getattr(_local, "budget", None)
    return DEFAULT_LIMITS if budget is None else budget.limits


def tick(where: str, *, memory_every: int = _MEMORY_EVERY, cost: int = 0) -> None:
    """A comprehension iteration or a `cel.bind` step: check time, and memory every
    `memory_every` ticks (the system call costs more than the rest of the hook; a binding,
    which can double a value each time, checks every time), or every tick once the growth
    is past half the budget. `cost`: the iteration's CEL runtime cost, for the cost limit."""
    budget: Budget | None = getattr(_local, "budget", None)
    if budget is None:
        return
    if budget.exceeded is not None:
        raise LimitExceeded(budget.exceeded)
    if cost:
        budget.spend(cost)
    budget.ticks += 1
    if budget.deadline is not None and time.monotonic() > budget.deadline:
        raise budget.timeout(where)
    if budget.ticks % memory_every == 0 or budget.memory_start is None or budget.memory_close:
        budget.check_memory(where)


def enter(function: str) -> None:
    """A kro function is about to run: the time budget applies to every call. (What kro
    functions return is capped by size, so the call does not pay for a memory check.)"""
    budget: Budget | None = getattr(_local, "budget", None)
    if budget is None:
        return
    if budget.exceeded is not None:
        raise LimitExceeded(budget.exceeded)
    if budget.deadline is not None and time.monotonic() > budget.deadline:
        raise budget.timeout(f"calling {function}")


def reserve(where: str, size: int) -> None:
    """The engine is about to build a value of about `size` bytes in one step, which no hook
    can interrupt: fail now if that would take the evaluation past its memory budget."""
    budget: Budget | None = getattr(_local, "budget", None)
    if budget is None:
        return
    if budget.exceeded is not None:
        raise LimitExceeded(budget.exceeded)
    budget.check_memory(where, extra=size)


def check_length(function: str, what: str, length: int, *, unit_bytes: int = 1) -> None:
    """Refuse, before building it, a value of `length` units of `unit_bytes` each."""
    limit = current_limits().max_value_bytes
    if length * unit_bytes > limit:
        raise LimitExceeded(
            f"{function}: {what} {length} exceeds the limit of {limit // unit_bytes} "
            f"({describe_bytes(limit)} per value)"
        )


def charge(function: str, value: Any) -> None:
    """Account for a value a kro function returned: the per-value and per-evaluation caps.

    Scalars and short strings are not counted: checking them would cost more than the
    call, and 10,000 iterations of them stay far below every limit.
    """
    if isinstance(value, (str, bytes, bytearray)):
        size = len(value)
    elif value is None or isinstance(value, (bool, int, float)):
        return
    else:
        size = estimated_size(value)
    if size <= _UNCOUNTED_BYTES:
        return
    if size > current_limits().max_value_bytes:
        raise too_large(function, size)
    budget: Budget | None = getattr(_local, "budget", None)
    if budget is not None:
        budget.charge(function, size)


def too_large(function: str, size: int) -> LimitExceeded:
    """The error for a result of `size` estimated bytes over the per-value limit."""
    limit = current_limits().max_value_bytes
    return LimitExceeded(
        f"{function}: result of about {size} bytes exceeds the limit of "
        f"{describe_bytes(limit)} per value"
    )


def estimated_size(value: Any) -> int:
    """Roughly the serialized size of a value: string and bytes lengths, 8 bytes per scalar
    and per list element or map entry. Linear in the value, like producing it was, and
    iterative, so a deeply nested value cannot exhaust the Python stack."""
    if isinstance(value, (str, bytes, bytearray)):
        return len(value)
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (str, bytes, bytearray)):
            total += len(item)
        elif isinstance(item, (list, tuple)):
            total += _ENTRY_BYTES * len(item)
            stack.extend(item)
        elif isinstance(item, dict):
            total += _ENTRY_BYTES * len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, Message):
            total += item.ByteSize()
        else:
            total += _SCALAR_BYTES
    return total
