"""kro.engine.watches: the engine's view of the watch coordinator, and the one a dry run uses.

A pass declares what it reads so that a change brings its owner back, and may answer reads from
the informer caches. `NoWatches` (a dry run, or a teardown) watches and caches nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from kro.dynamic import ObjectRef, ScalarWatch
from kro.dynamic.watches import WatchRequest

__all__ = ["NoWatches", "Watches"]


class Watches(Protocol):
    async def watch(self, parent: ObjectRef, request: WatchRequest) -> None: ...

    def cached_object(self, request: ScalarWatch) -> tuple[bool, Mapping[str, Any] | None]: ...

    def declared(self, parent: ObjectRef, request: WatchRequest) -> bool: ...

    @property
    def shard_version(self) -> int: ...


class NoWatches:
    """Watches nothing, caches nothing: every read is a request."""

    async def watch(self, parent: ObjectRef, request: WatchRequest) -> None:
        return None

    def cached_object(self, request: ScalarWatch) -> tuple[bool, Mapping[str, Any] | None]:
        return False, None

    def declared(self, parent: ObjectRef, request: WatchRequest) -> bool:
        return False

    @property
    def shard_version(self) -> int:
        return 0
