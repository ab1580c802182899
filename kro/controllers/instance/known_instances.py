"""kro.controllers.instance.known_instances: the instance as our own last write left it.

Why: a pass starts with a GET of its instance (the informer holds metadata only). When the
informer still shows the resourceVersion of our last write's answer (or an older one), nobody
wrote it since, so that answer *is* the instance and the GET is saved (one or two per new
instance). Kept only for instances whose last pass did not settle, until their next pass, so
the memory is bounded by the instances in flight.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kro.dynamic import ScalarWatch, WatchCoordinator
from kro.runtime.gvk import GVR
from kro.runtime.memory import Fact, ObjectMemory

Key = tuple[str, str]


KNOWN: Fact[dict[str, Any]] = Fact("instance")
"""Per instance whose last pass did not settle: the server's last answer about it."""


class KnownInstances:
    """Per instance of one kind: the server's last answer about it, while its cache agrees; the
    `KNOWN` fact of the process's one skip memory (kro.runtime.memory)."""

    def __init__(
        self, watches: WatchCoordinator, gvr: GVR, memory: ObjectMemory | None = None
    ) -> None:
        self._watches = watches
        self._gvr = gvr
        self._memory = memory if memory is not None else ObjectMemory()

    def keep(self, key: Key, instance: Mapping[str, Any]) -> None:
        """Remember `instance`, an answer of the API server, for the next pass of `key`."""
        metadata = instance.get("metadata") or {}
        version = str(metadata.get("resourceVersion") or "")
        if not version:
            self.forget(key)
            return
        metadata = {k: v for k, v in metadata.items() if k != "managedFields"}
        self._memory.remember(KNOWN, (self._gvr, *key), version, {**instance, "metadata": metadata})

    def take(self, key: Key) -> dict[str, Any] | None:
        """The kept instance of `key` if the informer shows it unchanged since (or yet to
        deliver our own last write); forgotten either way (a pass owns what it takes)."""
        cached = self._watches.cached_versions(ScalarWatch("", self._gvr, key[0], key[1]))
        return self._memory.take(KNOWN, (self._gvr, *key), (cached or {}).get(key))

    def forget(self, key: Key) -> None:
        self._memory.forget(KNOWN, (self._gvr, *key))
