"""The skip-unchanged cache: a skip needs the same UID, resourceVersion and body digest."""

from __future__ import annotations

from typing import Any

import pytest

from kro.applyset import AppliedCache
from kro.applyset.cache import digest
from kro.runtime.memory import Fact

APPLIED: Fact[str] = Fact("applied")  # the fact an AppliedCache keeps by default


def _obj(uid: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"uid": uid, "resourceVersion": rv}}


def test_digest_ignores_key_order() -> None:
    assert digest({"a": 1, "b": {"c": 2, "d": 3}}) == digest({"b": {"d": 3, "c": 2}, "a": 1})
    assert digest({"a": 1}) != digest({"a": 2})


def test_current_only_for_the_same_uid_version_and_digest() -> None:
    cache = AppliedCache()
    cache.remember(_obj("u1", "5"), "d1")
    assert cache.is_current(_obj("u1", "5"), "d1")
    assert not cache.is_current(_obj("u1", "6"), "d1")  # someone wrote since
    assert not cache.is_current(_obj("u1", "5"), "d2")  # we want something else now
    assert not cache.is_current(_obj("u2", "5"), "d1")  # another object


def test_a_newer_apply_replaces_the_entry() -> None:
    cache = AppliedCache()
    cache.remember(_obj("u1", "5"), "d1")
    cache.remember(_obj("u1", "7"), "d2")
    assert cache.memory.size(APPLIED) == 1
    assert cache.is_current(_obj("u1", "7"), "d2")


def test_objects_without_uid_or_version_are_never_current() -> None:
    cache = AppliedCache()
    cache.remember({"metadata": {}}, "d")
    assert cache.memory.size(APPLIED) == 0
    assert not cache.is_current({"metadata": {}}, "d")


def test_least_recently_used_entries_are_evicted() -> None:
    cache = AppliedCache(max_entries=2)
    cache.remember(_obj("u1", "1"), "d")
    cache.remember(_obj("u2", "1"), "d")
    assert cache.is_current(_obj("u1", "1"), "d")  # touches u1
    cache.remember(_obj("u3", "1"), "d")
    assert cache.memory.size(APPLIED) == 2
    assert not cache.is_current(_obj("u2", "1"), "d")
    assert cache.is_current(_obj("u1", "1"), "d")


def test_forget_and_bounds() -> None:
    cache = AppliedCache()
    cache.remember(_obj("u1", "1"), "d")
    cache.memory.forget(APPLIED, "u1")
    assert not cache.is_current(_obj("u1", "1"), "d")
    with pytest.raises(ValueError, match="at least 1"):
        AppliedCache(max_entries=0)


def test_applied_version_is_what_the_last_apply_returned() -> None:
    cache = AppliedCache(max_entries=1)
    assert cache.applied_version("u1") is None
    cache.remember(_obj("u1", "5"), "d")
    cache.remember(_obj("u1", "7"), "d")
    assert cache.applied_version("u1") == "7"
    cache.remember(_obj("u2", "1"), "d")  # evicts u1
    assert cache.applied_version("u1") is None
