"""kro.controllers.events: Kubernetes Events about instances (feature gate InstanceConditionEvents).

With the gate on, every instance reconcile that changes the status of a condition tells the
user with an Event on the instance (§1.V): type `Normal` if the new status is True, else
`Warning`; reason = the condition type; message `<old> -> <new>: <reason>`, with `none` as the
old status of a condition that did not exist. Each generated kind reports as
`kro/<crd-name>-controller`, as upstream names its recorder per instance controller.

Instance controllers come and go with their RGDs, so their recorders do too: `RecorderPool`
hands out one `kro.runtime.events.EventRecorder` per reporting name and runs every recorder's
sender task itself, under the manager (it is a runnable).
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Mapping, Sequence
from typing import Any

from kro.runtime.events import EventClient, EventRecorder, EventRecorderOptions, EventType

NONE_STATUS = "none"


def recorder_name(crd_name: str) -> str:
    """The reporting controller of a generated kind: `kro/<crd-name>-controller`."""
    return f"kro/{crd_name}-controller"


def condition_changes(
    before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]
) -> list[tuple[str, str, str, str]]:
    """(type, old status, new status, new reason) of every condition whose status changed.

    Conditions that disappeared are not reported: there is no new status to report.
    """
    old = {str(c.get("type")): str(c.get("status", "")) for c in before}
    changes = []
    for condition in after:
        kind = str(condition.get("type"))
        status = str(condition.get("status", ""))
        previous = old.get(kind, NONE_STATUS)
        if previous != status:
            changes.append((kind, previous, status, str(condition.get("reason", ""))))
    return changes


def record_condition_changes(
    recorder: EventRecorder,
    instance: Mapping[str, Any],
    before: Sequence[Mapping[str, Any]],
    after: Sequence[Mapping[str, Any]],
) -> None:
    """One Event per changed condition, in wire order (never raises, never waits)."""
    for kind, old, new, reason in condition_changes(before, after):
        event_type: EventType = "Normal" if new == "True" else "Warning"
        recorder.record(instance, event_type, kind, f"{old} -> {new}: {reason}")


class RecorderPool:
    """One EventRecorder per reporting name, all sent by `run` (a manager runnable).

    A recorder lives as long as the process, also after its RGD is deleted: it is small, and
    an RGD re-created under the same name reports through it again.
    """

    def __init__(self, client: EventClient, *, reporting_instance: str | None = None) -> None:
        self._client = client
        self._instance = reporting_instance or os.environ.get("POD_NAME") or socket.gethostname()
        self._recorders: dict[str, EventRecorder] = {}
        self._new: asyncio.Queue[EventRecorder] = asyncio.Queue()

    def recorder(self, name: str) -> EventRecorder:
        """The recorder reporting as `name`; created (and started by `run`) on first use."""
        recorder = self._recorders.get(name)
        if recorder is None:
            options = EventRecorderOptions(
                reporting_controller=name, reporting_instance=self._instance, api="v1"
            )
            recorder = self._recorders[name] = EventRecorder(self._client, options)
            self._new.put_nowait(recorder)
        return recorder

    async def run(self) -> None:
        """Run every recorder's sender until cancelled, starting new ones as they appear."""
        async with asyncio.TaskGroup() as senders:
            while True:
                recorder = await self._new.get()
                name = recorder.options.reporting_controller
                senders.create_task(recorder.run(), name=f"events:{name}")
