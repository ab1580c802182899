"""kro.runtime.predicates: which informer events are worth a reconcile (controller-runtime's).

A watch delivers every change to every object; most controllers care about a few. A `Predicate`
looks at one event (create, update with old and new, delete) and says whether its key should go
to the queue. Filtering here, before the queue, is what keeps a controller that owns a busy kind
(every Deployment status change, every resync) from reconciling for nothing.

Predicates compose: `a & b`, `a | b`, `~a` (or `and_`, `or_`, `not_`), evaluated per event kind
as controller-runtime does, so `~generation_changed()` also drops creates and deletes (a create
is always a change). The built-ins look only at updates; creates and deletes pass:

    generation_changed()        spec edits (metadata.generation), not status or metadata writes;
                                kinds without a generation (ConfigMap, Secret) never change it
    labels_changed()            metadata.labels differ
    annotations_changed()       metadata.annotations differ
    resource_version_changed()  anything changed (drops the informer's periodic resyncs)
    matches(fn)                 a custom test of one object (the new one on update)
    on_update(fn)               a custom test of (old, new); creates and deletes pass
    has_labels("a=b,!c")        the object matches a label selector (all three events)

Predicates must not change the objects they are given: they are the informer's cached dicts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .labels import parse_selector

Obj = Mapping[str, Any]
ObjectTest = Callable[[Obj], bool]
UpdateTest = Callable[[Obj, Obj], bool]

__all__ = [
    "Predicate",
    "and_",
    "annotations_changed",
    "generation_changed",
    "has_labels",
    "labels_changed",
    "matches",
    "not_",
    "on_update",
    "or_",
    "resource_version_changed",
]


def _yes(_: Obj) -> bool:
    return True


def _yes2(_: Obj, __: Obj) -> bool:
    return True


class Predicate:
    """Three tests, one per event kind; each defaults to letting the event through."""

    __slots__ = ("_create", "_delete", "_update", "name")

    def __init__(
        self,
        *,
        create: ObjectTest = _yes,
        update: UpdateTest = _yes2,
        delete: ObjectTest = _yes,
        name: str = "predicate",
    ) -> None:
        self._create = create
        self._update = update
        self._delete = delete
        self.name = name

    def create(self, obj: Obj) -> bool:
        return self._create(obj)

    def update(self, old: Obj, new: Obj) -> bool:
        return self._update(old, new)

    def delete(self, obj: Obj) -> bool:
        return self._delete(obj)

    def __and__(self, other: Predicate) -> Predicate:
        return and_(self, other)

    def __or__(self, other: Predicate) -> Predicate:
        return or_(self, other)

    def __invert__(self) -> Predicate:
        return not_(self)

    def __repr__(self) -> str:
        return f"Predicate({self.name})"


def and_(*predicates: Predicate) -> Predicate:
    """Every predicate lets the event through (none given: everything passes)."""
    ps = tuple(predicates)
    return Predicate(
        create=lambda o: all(p.create(o) for p in ps),
        update=lambda old, new: all(p.update(old, new) for p in ps),
        delete=lambda o: all(p.delete(o) for p in ps),
        name="(" + " & ".join(p.name for p in ps) + ")",
    )


def or_(*predicates: Predicate) -> Predicate:
    """At least one predicate lets the event through (none given: nothing passes)."""
    ps = tuple(predicates)
    return Predicate(
        create=lambda o: any(p.create(o) for p in ps),
        update=lambda old, new: any(p.update(old, new) for p in ps),
        delete=lambda o: any(p.delete(o) for p in ps),
        name="(" + " | ".join(p.name for p in ps) + ")",
    )


def not_(predicate: Predicate) -> Predicate:
    """The opposite decision, per event kind."""
    return Predicate(
        create=lambda o: not predicate.create(o),
        update=lambda old, new: not predicate.update(old, new),
        delete=lambda o: not predicate.delete(o),
        name=f"~{predicate.name}",
    )


def _meta(obj: Obj) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _field_changed(field: str) -> UpdateTest:
    def changed(old: Obj, new: Obj) -> bool:
        return _meta(old).get(field) != _meta(new).get(field)

    return changed


def _map_changed(field: str) -> UpdateTest:
    # An absent map and an empty one are the same to a reader: `labels: {}` is not a change.
    def changed(old: Obj, new: Obj) -> bool:
        return (_meta(old).get(field) or {}) != (_meta(new).get(field) or {})

    return changed


def generation_changed() -> Predicate:
    """Updates that changed metadata.generation: spec edits, not status or label writes."""
    return Predicate(update=_field_changed("generation"), name="generation_changed")


def labels_changed() -> Predicate:
    """Updates that changed metadata.labels."""
    return Predicate(update=_map_changed("labels"), name="labels_changed")


def annotations_changed() -> Predicate:
    """Updates that changed metadata.annotations."""
    return Predicate(update=_map_changed("annotations"), name="annotations_changed")


def resource_version_changed() -> Predicate:
    """Updates that changed anything: drops the informer's resyncs (`on_update(obj, obj)`)."""
    return Predicate(update=_field_changed("resourceVersion"), name="resource_version_changed")


def matches(test: ObjectTest, name: str | None = None) -> Predicate:
    """A custom test of one object: the object on create and delete, the new one on update."""
    return Predicate(
        create=test,
        update=lambda _old, new: test(new),
        delete=test,
        name=name or str(getattr(test, "__name__", "matches")),
    )


def on_update(test: UpdateTest, name: str | None = None) -> Predicate:
    """A custom test of (old, new) for updates; creates and deletes pass."""
    return Predicate(update=test, name=name or str(getattr(test, "__name__", "on_update")))


def has_labels(selector: str) -> Predicate:
    """Objects whose labels match a label selector (`a=b`, `a!=b`, `a`, `!a`, `a in (x,y)`).

    On update the new object decides, so an object that stops matching is no longer reported:
    when losing the label must undo something, let label changes through (`labels_changed()`)
    and decide in the reconciler instead.
    """
    wanted = parse_selector(selector)

    def test(obj: Obj) -> bool:
        labels = _meta(obj).get("labels")
        return wanted(labels if isinstance(labels, Mapping) else {})

    return matches(test, name=f"has_labels({selector!r})")
