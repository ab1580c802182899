"""Store: keys, the built-in namespace index, custom indexes kept in step with writes."""

from __future__ import annotations

from typing import Any

import pytest

from kro.runtime.store import NAMESPACE_INDEX, Store, object_key, split_key


def obj(name: str, ns: str | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if ns:
        meta["namespace"] = ns
    return {"metadata": meta}


def by_app(o: Any) -> list[str]:
    app = o["metadata"]["labels"].get("app")
    return [app] if app else []


@pytest.mark.parametrize(
    ("o", "key"),
    [(obj("a", "ns"), "ns/a"), (obj("node-1"), "node-1")],
    ids=["namespaced", "cluster-scoped"],
)
def test_key_is_namespace_slash_name_or_just_name(o: dict[str, Any], key: str) -> None:
    assert object_key(o) == key
    store = Store()
    store.add(o)
    assert store.get(key) is o
    ns, name = split_key(key)
    assert store.get_by(ns or None, name) is o


def test_add_returns_the_previous_object_and_replaces_it() -> None:
    store = Store()
    first, second = obj("a", "ns"), obj("a", "ns")
    assert store.add(first) is None
    assert store.add(second) is first
    assert store.list() == [second]
    assert len(store) == 1


def test_namespace_index_is_built_in_and_follows_deletes() -> None:
    store = Store()
    store.add(obj("a", "x"))
    store.add(obj("b", "x"))
    store.add(obj("c", "y"))
    assert sorted(o["metadata"]["name"] for o in store.index(NAMESPACE_INDEX, "x")) == ["a", "b"]
    assert store.delete("x/a") is not None
    assert [o["metadata"]["name"] for o in store.index(NAMESPACE_INDEX, "x")] == ["b"]
    assert store.delete("x/a") is None


def test_custom_index_covers_existing_objects_and_updates() -> None:
    store = Store()
    store.add(obj("a", "ns", app="web"))
    store.add_indexer("app", by_app)
    assert store.index_keys("app", "web") == ["ns/a"]
    store.update(obj("a", "ns", app="db"))
    assert store.index("app", "web") == []
    assert store.index_keys("app", "db") == ["ns/a"]


def test_duplicate_indexer_name_is_rejected() -> None:
    store = Store()
    with pytest.raises(ValueError, match="namespace"):
        store.add_indexer(NAMESPACE_INDEX, by_app)


def test_unknown_index_raises_key_error() -> None:
    with pytest.raises(KeyError):
        Store().index("nope", "x")


def test_replace_swaps_content_rebuilds_indexes_and_returns_previous() -> None:
    store = Store()
    store.add_indexer("app", by_app)
    store.add(obj("a", "ns", app="web"))
    store.add(obj("b", "ns", app="web"))
    previous = store.replace([obj("b", "ns", app="db"), obj("c", "other")])
    assert set(previous) == {"ns/a", "ns/b"}
    assert sorted(store.keys()) == ["ns/b", "other/c"]
    assert store.index("app", "web") == []
    assert store.index_keys("app", "db") == ["ns/b"]
    assert store.index_keys(NAMESPACE_INDEX, "other") == ["other/c"]
    assert "ns/a" not in store
