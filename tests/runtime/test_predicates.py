"""Predicates decide per event kind and compose like controller-runtime's; selectors match as the
API server does."""

from __future__ import annotations

from typing import Any

import pytest

from kro.runtime.labels import implies, parse_selector
from kro.runtime.predicates import (
    Predicate,
    and_,
    annotations_changed,
    generation_changed,
    has_labels,
    labels_changed,
    matches,
    not_,
    on_update,
    or_,
    resource_version_changed,
)


def obj(
    *,
    generation: int | None = 1,
    rv: str = "1",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "a", "namespace": "ns", "resourceVersion": rv}
    if generation is not None:
        meta["generation"] = generation
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    return {"metadata": meta}


def test_generation_changed_passes_spec_edits_only() -> None:
    p = generation_changed()
    assert p.update(obj(generation=1), obj(generation=2, rv="2"))
    assert not p.update(obj(generation=1), obj(generation=1, rv="2"))  # a status write
    assert p.create(obj())
    assert p.delete(obj())


def test_generation_changed_never_passes_updates_of_kinds_without_a_generation() -> None:
    assert not generation_changed().update(obj(generation=None), obj(generation=None, rv="2"))


def test_labels_and_annotations_changed() -> None:
    assert labels_changed().update(obj(labels={"a": "1"}), obj(labels={"a": "2"}))
    assert not labels_changed().update(obj(labels={}), obj(labels=None))  # absent == empty
    assert annotations_changed().update(obj(), obj(annotations={"x": "y"}))
    assert not annotations_changed().update(obj(labels={"a": "1"}), obj(labels={"a": "2"}))


def test_resource_version_changed_drops_resyncs() -> None:
    same = obj(rv="7")
    assert not resource_version_changed().update(same, same)
    assert resource_version_changed().update(obj(rv="7"), obj(rv="8"))


def test_operators_compose_per_event_kind() -> None:
    gen, lab = generation_changed(), labels_changed()
    label_edit = (obj(labels={"a": "1"}), obj(labels={"a": "2"}, rv="2"))
    assert (gen | lab).update(*label_edit)
    assert not (gen & lab).update(*label_edit)
    assert (~gen).update(*label_edit)
    assert not (~gen).create(obj())  # as upstream: a negated predicate drops creates
    assert or_(gen, lab).name == "(generation_changed | labels_changed)"
    assert and_().create(obj())
    assert not or_().create(obj())
    assert not_(gen).name == "~generation_changed"


def test_custom_predicates() -> None:
    def big(o: Any) -> bool:
        return int(o["metadata"]["resourceVersion"]) > 5

    p = matches(big)
    assert p.name == "big"
    assert p.create(obj(rv="6"))
    assert not p.delete(obj(rv="1"))
    assert p.update(obj(rv="1"), obj(rv="9"))  # the new object decides
    grew = on_update(lambda old, new: new["metadata"]["generation"] > old["metadata"]["generation"])
    assert grew.update(obj(generation=1), obj(generation=2))
    assert not grew.update(obj(generation=2), obj(generation=1))
    assert grew.create(obj())
    assert grew.delete(obj())
    assert isinstance(Predicate(), Predicate)
    assert Predicate().update(obj(), obj())


def test_has_labels() -> None:
    p = has_labels("team=payments,!legacy")
    assert p.create(obj(labels={"team": "payments"}))
    assert not p.create(obj(labels={"team": "payments", "legacy": ""}))
    assert not p.delete(obj())


@pytest.mark.parametrize(
    ("selector", "labels", "selected"),
    [
        ("", {}, True),
        ("a=1", {"a": "1"}, True),
        ("a==1", {"a": "2"}, False),
        ("a!=1", {}, True),  # as on the server: a missing key is "not equal"
        ("a!=1", {"a": "1"}, False),
        ("a", {"a": ""}, True),
        ("!a", {"a": ""}, False),
        ("a in (x, y)", {"a": "y"}, True),
        ("a in (x,y)", {}, False),
        ("a notin (x,y)", {}, True),
        ("a notin (x,y),b", {"a": "z", "b": "1"}, True),
        ("a notin (x,y),b", {"a": "z"}, False),
    ],
)
def test_label_selectors(selector: str, labels: dict[str, str], selected: bool) -> None:
    assert parse_selector(selector)(labels) is selected


@pytest.mark.parametrize("selector", ["a in (x", "a)=b", "=b", "a=b=c", "a b"])
def test_unparseable_selectors_are_refused(selector: str) -> None:
    with pytest.raises(ValueError, match="label"):
        parse_selector(selector)


@pytest.mark.parametrize(
    ("query", "base", "implied"),
    [
        ("a=1", "a=1", True),
        ("a=1,b", "b", True),
        ("a=1", "a", True),
        ("a==1", "a", True),
        ("a in (x,y)", "a", True),
        ("a!=1", "a", False),
        ("a notin (x)", "a", False),
        ("a", "a=1", False),
        ("b=1", "a", False),
        ("", "a", False),
        ("a", "", True),
    ],
)
def test_selector_implication(query: str, base: str, implied: bool) -> None:
    assert implies(query, base) is implied
