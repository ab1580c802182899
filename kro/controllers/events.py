"""kro.controllers.events: Kubernetes Events about instances (feature gate InstanceConditionEvents).

With the gate on, every instance reconcile that changes the status of a condition tells the
user with an Event on the instance (§1.V): type `Normal` if the new status is True, else
`Warning`; reason = the condition type; message `<old> -> <new>: <reason>`, with `none` as the
old status of a condition that did not exist. Each generated kind reports as
`kro/<crd-name>-controller`, as upstream names its recorder per instance controller.

Instance controllers come and go with their RGDs, so their recorders do too: `RecorderPool`
hands out one `kro.runtime.events.EventRecorder` per reporting name and runs every recorder's
sender task itself, under the manager (it is a runnable); `release(name)` ends both when the
kind is deregistered.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import structlog

from kro.runtime.events import EventClient, EventRecorder, EventRecorderOptions, EventType

log = structlog.get_logger(__name__)

NONE_STATUS = "none"
RELEASE_FLUSH_S: Final = 10.0
"""How long a released recorder may go on sending what it was given before its release."""


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


@dataclass(slots=True)
class _Sender:
    """A recorder and the signal that its kind is gone."""

    recorder: EventRecorder
    released: asyncio.Event = field(default_factory=asyncio.Event)


class RecorderPool:
    """One EventRecorder per reporting name, all sent by `run` (a manager runnable).

    A recorder lives while its kind is registered. `release(name)` (the kind was deregistered)
    lets it send the Events it already holds, the last ones about the kind's instances, for at
    most `flush_timeout_s`, then stops its sender and forgets it: otherwise every kind ever
    generated would keep a recorder and an idle task until the process exits. A kind
    registered again under the same name gets a new recorder.
    """

    def __init__(
        self,
        client: EventClient,
        *,
        reporting_instance: str | None = None,
        flush_timeout_s: float = RELEASE_FLUSH_S,
    ) -> None:
        self._client = client
        self._instance = reporting_instance or os.environ.get("POD_NAME") or socket.gethostname()
        self._flush_timeout_s = flush_timeout_s
        self._senders: dict[str, _Sender] = {}
        self._new: asyncio.Queue[_Sender] = asyncio.Queue()

    def recorder(self, name: str) -> EventRecorder:
        """The recorder reporting as `name`; created (and started by `run`) on first use."""
        sender = self._senders.get(name)
        if sender is None:
            options = EventRecorderOptions(
                reporting_controller=name, reporting_instance=self._instance, api="v1"
            )
            sender = self._senders[name] = _Sender(EventRecorder(self._client, options))
            self._new.put_nowait(sender)
        return sender.recorder

    def release(self, name: str) -> None:
        """Let go of the recorder reporting as `name` (see the class); unknown names are
        ignored. Events recorded on it after this are dropped once its sender has stopped."""
        sender = self._senders.pop(name, None)
        if sender is not None:
            sender.released.set()

    def names(self) -> frozenset[str]:
        """The reporting names with a recorder."""
        return frozenset(self._senders)

    async def run(self) -> None:
        """Run every recorder's sender until cancelled, starting new ones as they appear."""
        async with asyncio.TaskGroup() as senders:
            while True:
                sender = await self._new.get()
                name = sender.recorder.options.reporting_controller
                senders.create_task(self._send(sender), name=f"events:{name}")

    async def _send(self, sender: _Sender) -> None:
        """Send `sender`'s Events until it is released and has sent what it held."""
        recorder = sender.recorder
        async with asyncio.TaskGroup() as group:
            sending = group.create_task(recorder.run())
            await sender.released.wait()
            try:
                async with asyncio.timeout(self._flush_timeout_s):
                    await recorder.flush()
            except TimeoutError:
                log.warning(
                    "events.dropped_on_release",
                    reporting_controller=recorder.options.reporting_controller,
                    pending=recorder.pending,
                )
            sending.cancel()
