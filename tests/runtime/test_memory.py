"""kro.runtime.memory: one memory of facts about objects, each valid while the object's
resourceVersion proves nobody wrote it since (the API server changes it on every write)."""

from __future__ import annotations

from kro.runtime.memory import UNVERSIONED, Fact, ObjectMemory

CONTENT: Fact[str] = Fact("content")
APPLIED: Fact[str] = Fact("applied", exact=True)
BOUNDED: Fact[str] = Fact("bounded", max_entries=2)
MEMBERS: Fact[str] = Fact("members")


def test_a_fact_holds_while_the_object_is_at_its_version_or_a_cache_lags_behind_it() -> None:
    memory = ObjectMemory()
    memory.remember(CONTENT, "cm", "10", "body")
    assert memory.recall(CONTENT, "cm", "10") == "body"
    assert memory.recall(CONTENT, "cm", "9") == "body"  # the cache has yet to show our write
    assert memory.recall(CONTENT, "cm", "11") is None  # someone wrote it since
    assert memory.recall(CONTENT, "cm", None) is None  # no cache can tell
    assert memory.recall(CONTENT, "other", "10") is None


def test_an_exact_fact_needs_the_very_same_version() -> None:
    memory = ObjectMemory()
    memory.remember(APPLIED, "uid-1", "10", "digest")
    assert memory.recall(APPLIED, "uid-1", "10") == "digest"
    assert memory.recall(APPLIED, "uid-1", "9") is None
    assert memory.version(APPLIED, "uid-1") == "10"


def test_versions_that_are_not_numbers_only_match_themselves() -> None:
    memory = ObjectMemory()
    memory.remember(CONTENT, "cm", "abc", "body")
    assert memory.recall(CONTENT, "cm", "abc") == "body"
    assert memory.recall(CONTENT, "cm", "abb") is None


def test_an_unversioned_fact_holds_until_forgotten_or_cleared() -> None:
    memory = ObjectMemory()
    memory.remember(MEMBERS, "set-1", UNVERSIONED, "a,b")
    memory.remember(CONTENT, "cm", "1", "body")
    assert memory.recall(MEMBERS, "set-1", None) == "a,b"
    memory.forget(MEMBERS, "set-1")
    assert memory.recall(MEMBERS, "set-1", None) is None
    memory.remember(MEMBERS, "set-1", UNVERSIONED, "a,b")
    memory.clear(MEMBERS)  # one kind of fact
    assert memory.recall(MEMBERS, "set-1", None) is None
    assert memory.recall(CONTENT, "cm", "1") == "body"
    memory.clear()
    assert memory.recall(CONTENT, "cm", "1") is None


def test_the_least_recently_used_fact_goes_first_when_bounded() -> None:
    memory = ObjectMemory()
    memory.remember(BOUNDED, "a", "1", "A")
    memory.remember(BOUNDED, "b", "1", "B")
    assert memory.recall(BOUNDED, "a", "1") == "A"  # touches a
    memory.remember(BOUNDED, "c", "1", "C")
    assert memory.size(BOUNDED) == 2
    assert memory.recall(BOUNDED, "b", "1") is None
    assert memory.keys(BOUNDED) == ["a", "c"]


def test_take_recalls_once() -> None:
    memory = ObjectMemory()
    memory.remember(CONTENT, "cm", "5", "body")
    assert memory.take(CONTENT, "cm", "6") is None  # changed: and forgotten
    memory.remember(CONTENT, "cm", "5", "body")
    assert memory.take(CONTENT, "cm", "5") == "body"
    assert memory.recall(CONTENT, "cm", "5") is None


def test_switched_off_it_remembers_nothing() -> None:
    memory = ObjectMemory(enabled=False)
    memory.remember(CONTENT, "cm", "1", "body")
    assert memory.recall(CONTENT, "cm", "1") is None
    assert memory.version(CONTENT, "cm") is None
    assert memory.size(CONTENT) == 0
