"""The one program cache: a spec is compiled once per owner, an edit compiles again, and a
changed CRD drops exactly the programs that name its kind literally."""

from __future__ import annotations

from typing import Any, cast

import pytest

from kro.controllers.programs import ProgramCache
from kro.graph.model import Graph


class _Node:
    def __init__(
        self, group: str, kind: str, dynamic: bool = False, deferred: bool = False
    ) -> None:
        self.gvk = type("GVK", (), {"group": group, "kind": kind})()
        self.resource = kind.lower() + "s"
        self.dynamic_type = dynamic or deferred
        self.deferred = deferred


def program(*kinds: tuple[str, str], dynamic: bool = False, deferred: bool = False) -> Graph:
    nodes = {f"n{i}": _Node(g, k, dynamic, deferred) for i, (g, k) in enumerate(kinds)}
    return cast(Graph, type("Program", (), {"nodes": nodes})())


class Compiler:
    def __init__(self, result: Graph) -> None:
        self.result = result
        self.calls = 0

    async def __call__(self) -> Graph:
        self.calls += 1
        return self.result


async def test_a_spec_is_compiled_once_and_an_edit_replaces_it() -> None:
    cache = ProgramCache()
    first = Compiler(program(("apps", "Deployment")))
    assert await cache.program("Graph", "team", "g", "h1", first) is first.result
    assert await cache.program("Graph", "team", "g", "h1", first) is first.result
    assert first.calls == 1
    edited = Compiler(program(("", "ConfigMap")))
    assert await cache.program("Graph", "team", "g", "h2", edited) is edited.result
    assert len(cache) == 1  # the older spec of the same owner will not be back
    # Another owner kind with the same name and hash is another program.
    other = Compiler(program(("", "ConfigMap")))
    await cache.program("ResourceGraphDefinition", "team", "g", "h2", other)
    assert other.calls == 1


async def test_a_changed_kind_drops_the_programs_naming_it_literally() -> None:
    cache = ProgramCache()
    typed = Compiler(program(("example.com", "Widget")))
    dynamic = Compiler(program(("example.com", "Widget"), dynamic=True))
    unrelated = Compiler(program(("apps", "Deployment")))
    await cache.program("Graph", "a", "typed", "h", typed)
    await cache.program("Graph", "a", "dynamic", "h", dynamic)
    await cache.program("Graph", "a", "unrelated", "h", unrelated)
    assert cache.kind_changed("example.com", "Widget") == 1
    await cache.program("Graph", "a", "typed", "h", typed)
    await cache.program("Graph", "a", "dynamic", "h", dynamic)
    await cache.program("Graph", "a", "unrelated", "h", unrelated)
    assert (typed.calls, dynamic.calls, unrelated.calls) == (2, 1, 1)


async def test_a_kind_seen_by_its_crd_metadata_alone_drops_by_plural_and_group() -> None:
    """The CRD informer is metadata-only: the CRD's name gives its plural and group, not its
    kind. Typed programs are matched by the plural; a deferred node (DeferredSchemaResolution)
    of any kind of the group is dropped, so its program is compiled again, typed."""
    cache = ProgramCache()
    typed = Compiler(program(("example.com", "Widget")))
    deferred = Compiler(program(("example.com", "Gadget"), deferred=True))
    elsewhere = Compiler(program(("other.example.com", "Gadget"), deferred=True))
    await cache.program("Graph", "a", "typed", "h", typed)
    await cache.program("Graph", "a", "deferred", "h", deferred)
    await cache.program("ResourceGraphDefinition", "", "elsewhere", "h", elsewhere)
    assert cache.kind_changed("example.com", plural="gizmos") == 1  # the deferred one
    assert cache.kind_changed("example.com", plural="widgets") == 1
    assert cache.kind_changed("example.com", "Gadget") == 0  # already dropped
    await cache.program("Graph", "a", "deferred", "h", deferred)
    assert cache.kind_changed("example.com", "Gizmo") == 0  # another kind, spec known
    assert cache.kind_changed("example.com", "Gadget") == 1
    assert elsewhere.calls == 1


async def test_a_failed_compile_is_not_remembered_and_the_cache_is_bounded() -> None:
    cache = ProgramCache(max_entries=2)

    async def broken() -> Any:
        raise ValueError("no schema for kind Widget")

    with pytest.raises(ValueError, match="no schema"):
        await cache.program("Graph", "a", "g", "h", broken)
    assert len(cache) == 0
    for name in ("one", "two", "three"):
        await cache.program("Graph", "a", name, "h", Compiler(program()))
    assert len(cache) == 2
    again = Compiler(program())
    await cache.program("Graph", "a", "one", "h", again)  # the oldest was dropped
    assert again.calls == 1
    cache.forget("Graph", "a", "one")
    assert len(cache) == 1
