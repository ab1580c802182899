"""kro.controllers.programs: the one cache of compiled programs, for every owner kind.

Compiling a graph (type-checking every expression against the schemas of the kinds it names)
is the most expensive thing kro does for an owner, and its result depends only on what is
compiled: the owner's kind, its name (which error messages quote) and its spec. So programs are
kept by (owner kind, name, spec hash): a GraphRevision compiled again on another replica or
after a leadership change, and a `Graph` reconciled again, reuse theirs; an edit makes a new
key. A program is typed against the schemas of the kinds it names literally, so when such a
kind's CRD appears, changes or goes, every program that names it is dropped and compiled again
on its next use (V-64). Bounded: the oldest program is dropped first, which costs one compile.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Final

import structlog

from kro.graph.model import Graph, Node

__all__ = ["ProgramCache"]

log = structlog.get_logger(__name__)

MAX_PROGRAMS: Final = 4096

Owner = tuple[str, str, str]
"""(owner kind, namespace, name): an owner keeps one program, its latest spec's."""


class ProgramCache:
    """Compiled programs by owner kind, owner and spec hash (see the module doc)."""

    def __init__(self, max_entries: int = MAX_PROGRAMS) -> None:
        self._programs: OrderedDict[Owner, tuple[str, Graph]] = OrderedDict()
        self._max = max(1, max_entries)

    def __len__(self) -> int:
        return len(self._programs)

    async def program(
        self,
        kind: str,
        namespace: str,
        name: str,
        spec_hash: str,
        compile_: Callable[[], Awaitable[Graph]],
    ) -> Graph:
        """The program of this owner's spec: remembered, or compiled now (a compile error
        propagates and nothing is remembered: the next use compiles again). A new spec
        replaces the owner's older one, which will not be back."""
        owner = (kind, namespace, name)
        found = self._programs.get(owner)
        if found is not None and found[0] == spec_hash:
            self._programs.move_to_end(owner)
            return found[1]
        program = await compile_()
        self._programs.pop(owner, None)
        self._programs[owner] = (spec_hash, program)
        while len(self._programs) > self._max:
            self._programs.popitem(last=False)
        return program

    def current(self, kind: str, namespace: str, name: str) -> Graph | None:
        """The program last compiled for this owner (its latest spec), if still kept."""
        found = self._programs.get((kind, namespace, name))
        return found[1] if found is not None else None

    def forget(self, kind: str, namespace: str, name: str) -> None:
        """The owner is gone (or its program must be compiled again)."""
        self._programs.pop((kind, namespace, name), None)

    def kind_changed(self, group: str, kind: str = "", plural: str = "") -> int:
        """A CRD of `group` appeared, changed or vanished: drop every program typed against
        its kind (a node naming it literally, matched by `kind` or by the resource `plural`),
        and every program with a deferred node waiting for a kind of it (DeferredSchemaResolution:
        compiled again, typed, now that the kind may be served). Without `kind` (the CRD was
        seen by its metadata alone, whose name is `<plural>.<group>`) a deferred node of any
        kind of the group counts: one compile too many at worst. Returns how many were dropped."""

        def stale(node: Node) -> bool:
            if node.gvk.group != group:
                return False
            if node.deferred:
                return not kind or node.gvk.kind == kind
            if node.dynamic_type:
                return False
            return (bool(kind) and node.gvk.kind == kind) or (
                bool(plural) and node.resource == plural
            )

        dropped = [
            owner
            for owner, (_, program) in self._programs.items()
            if any(map(stale, program.nodes.values()))
        ]
        for owner in dropped:
            del self._programs[owner]
        if dropped:
            log.debug("programs.dropped", group=group, kind=kind, programs=len(dropped))
        return len(dropped)
