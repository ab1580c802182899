"""kro.controllers.instance.deferred_records: settled records written once the instance is
ACTIVE, in the work queue's background lane.

Why: the settled record (kro.controllers.instance.settled_record) costs one write of the
instance, and it used to be written before the status, on every new instance's way to ACTIVE.
An instance write is the dearest request of a pass: kube-apiserver decodes a custom resource
against its schema and rewrites its managedFields, which grow with every manager, so it costs
about three times a ConfigMap's create, and the status write that followed the record paid for
the record's managedFields entry as well. At 1,000 instances of five ConfigMaps, writing it
after ACTIVE (and no longer reading a new instance) took the time to ACTIVE from 29 s to
21-24 s (docs/performance.md). Only a restarted controller reads the record, so the pass
that settles now writes its status first and leaves the record here; the instance comes back
through the background lane (`Result(background=True)`), behind every new or changed instance,
and the record is written then, unless the caches say that something changed meanwhile (a pass
runs instead, and defers its own record).

What a controller stopped before that write loses is time, not correctness: its successor finds
no record, or an older one whose digests do not match, and runs the pass, which changes nothing
and defers the record again.

The record digests the instance as the status write left it (the server's answer), and is
written with that answer's resourceVersion as a precondition: a record can only land on the
instance it describes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from kro.api.names import ANNOTATION_SETTLED_INPUTS, FIELD_MANAGER_LABELLER
from kro.controllers.instance.settled_record import SettledRecord, recorded
from kro.dynamic.watches import Versions, WatchRequest
from kro.runtime.client import Client
from kro.runtime.errors import KubeError
from kro.runtime.gvk import GVR

log = structlog.get_logger(__name__)

Key = tuple[str, str]


@dataclass(frozen=True, slots=True)
class DeferredRecord:
    """A record to write on the instance at `version` (the settled pass's last answer)."""

    version: str
    value: str


class DeferredRecords:
    """Per instance of one kind: the settled record its last ACTIVE pass left to write."""

    def __init__(self, client: Client, gvr: GVR) -> None:
        self._client = client
        self._gvr = gvr
        self._pending: dict[Key, DeferredRecord] = {}

    def __len__(self) -> int:
        return len(self._pending)

    def defer(
        self,
        key: Key,
        identity: str,
        instance: Mapping[str, Any],
        reads: Mapping[WatchRequest, Versions],
    ) -> bool:
        """Keep the record of a settled pass that left `instance` (the server's answer) for
        the background lane. False when there is nothing to write: the instance carries this
        very record already, or it would be too large (then a restart runs the pass)."""
        self._pending.pop(key, None)
        version = str((instance.get("metadata") or {}).get("resourceVersion") or "")
        value = SettledRecord.of(identity, instance, reads).encode()
        if value is None:
            log.debug("instance.settled_record_too_large", watches=len(reads))
            return False
        if not version or recorded(instance) == value:
            return False
        self._pending[key] = DeferredRecord(version, value)
        return True

    def forget(self, key: Key) -> None:
        self._pending.pop(key, None)

    def clear(self) -> None:
        self._pending.clear()

    async def write(self, key: Key) -> str | None:
        """Write the record deferred for `key`, if any; returns the instance's new
        resourceVersion (None: nothing written). A conflict means the instance changed since
        the pass (its event runs a pass, which defers its own record); any failure only costs
        a full pass after a restart."""
        pending = self._pending.pop(key, None)
        if pending is None:
            return None
        namespace, name = key
        patch = {
            "metadata": {
                "resourceVersion": pending.version,
                "annotations": {ANNOTATION_SETTLED_INPUTS: pending.value},
            }
        }
        try:
            answer = await self._client.patch(
                self._gvr,
                name,
                patch,
                namespace=namespace or None,
                field_manager=FIELD_MANAGER_LABELLER,
            )
        except KubeError as error:
            log.debug("instance.settled_record_not_written", error=str(error))
            return None
        return str((answer.get("metadata") or {}).get("resourceVersion") or "") or None
