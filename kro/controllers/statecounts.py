"""kro.controllers.statecounts: how many objects are in each state, read at scrape time.

`instances_by_state{rgd, state}` and `rgds_by_state{state}` answer "how many instances of this
RGD are in ERROR" without listing the cluster: the reconcilers already know every object's
`status.state` when they compute it, so they tell a `StateCounts` (one dict write when the state
did not change, two counter updates when it did), and the provider's scrape-time gauge reads the
counts. The cost is per reconcile and constant, and nothing runs between scrapes.

Every state an object can be in is reported, at 0 when no object is in it, from the moment its
group (an RGD) is registered: an alert on `instances_by_state{state="ERROR"} > 0` then sees the
series before the first error. A group's series go when the group is dropped (its RGD or kind
is gone), an object's contribution when it is forgotten (it was deleted).

Neighbours: kro.controllers.metrics (which owns the two gauges), kro.runtime.metrics
(`CallbackGaugeProvider`, the scrape-time gauge).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterator, Sequence

from kro.runtime.metrics import CallbackGaugeProvider, MetricsProvider, Sample


class StateCounts:
    """Objects per (group, state), kept by the code that writes `status.state`.

    `label` names the group's label on the gauge (`rgd`); an empty `label` means one unnamed
    group (`rgds_by_state` has only `state`). With a provider that cannot compute gauges at
    scrape time (the no-op one) nothing is tracked and every call returns at once.
    """

    def __init__(
        self,
        provider: MetricsProvider,
        name: str,
        documentation: str,
        *,
        label: str,
        states: Sequence[str],
        enabled: bool = True,
    ) -> None:
        self._label = label
        self._states = tuple(states)
        self._objects: dict[str, dict[Hashable, str]] = {}
        self._counts: dict[str, Counter[str]] = {}
        self.enabled = enabled and isinstance(provider, CallbackGaugeProvider)
        if self.enabled and isinstance(provider, CallbackGaugeProvider):
            labels = (label, "state") if label else ("state",)
            provider.callback_gauge(name, documentation, labels, self.samples)

    def register(self, group: str = "") -> None:
        """Report `group`'s states (at 0) from now on, before any object is counted."""
        if self.enabled and group not in self._counts:
            self._objects[group] = {}
            self._counts[group] = Counter()

    def set(self, key: Hashable, state: str, group: str = "") -> None:
        """`key` (a namespace/name) of `group` is now in `state`."""
        if not self.enabled:
            return
        objects = self._objects.get(group)
        if objects is None:
            self.register(group)
            objects = self._objects[group]
        previous = objects.get(key)
        if previous == state:
            return
        counts = self._counts[group]
        if previous is not None:
            counts[previous] -= 1
        objects[key] = state
        counts[state] += 1

    def forget(self, key: Hashable, group: str = "") -> None:
        """`key` is gone: it no longer counts in any state."""
        objects = self._objects.get(group)
        if objects is None:
            return
        previous = objects.pop(key, None)
        if previous is not None:
            self._counts[group][previous] -= 1

    def drop(self, group: str = "") -> None:
        """`group` is gone: its series disappear from the gauge."""
        self._objects.pop(group, None)
        self._counts.pop(group, None)

    def count(self, state: str, group: str = "") -> int:
        """Objects of `group` in `state` now (0 for an unknown group)."""
        counts = self._counts.get(group)
        return counts[state] if counts is not None else 0

    def samples(self) -> Iterator[Sample]:
        """One sample per group and state: every known state, and any other one seen."""
        for group, counts in list(self._counts.items()):
            base = {self._label: group} if self._label else {}
            for state in (*self._states, *(s for s in counts if s not in self._states)):
                yield ({**base, "state": state}, float(counts[state]))
