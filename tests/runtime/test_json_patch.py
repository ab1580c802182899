"""The JSON patch a mutating webhook answers with: applying diff(a, b) to a gives b, exactly."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kro.runtime.json_patch import PatchError, apply, diff, pointer, same

scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-2, 2) | st.text(max_size=3)
keys = st.sampled_from(["a", "b", "a/b", "~c", "", "0"])
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(json_values, json_values)
def test_applying_the_diff_gives_the_target(before: Any, after: Any) -> None:
    assert same(apply(before, diff(before, after)), after)


@given(json_values)
def test_an_unchanged_document_needs_no_patch(doc: Any) -> None:
    assert diff(doc, doc) == []


def test_a_defaulted_field_is_one_add_and_nothing_else() -> None:
    before = {"metadata": {"name": "a"}, "spec": {"image": "nginx"}}
    after = {"metadata": {"name": "a"}, "spec": {"image": "nginx", "replicas": 1}}
    assert diff(before, after) == [{"op": "add", "path": "/spec/replicas", "value": 1}]


def test_keys_are_escaped_as_json_pointers() -> None:
    before: dict[str, Any] = {"metadata": {"labels": {}}}
    after = {"metadata": {"labels": {"example.com/a~b": "x"}}}
    assert diff(before, after) == [
        {"op": "add", "path": "/metadata/labels/example.com~1a~0b", "value": "x"}
    ]
    assert pointer(["a/b", "c~d", 0]) == "/a~1b/c~0d/0"


@pytest.mark.parametrize(("a", "b"), [(True, 1), (1, 1.0), (0, False), ("1", 1), (None, 0)])
def test_a_change_of_json_type_is_a_change(a: Any, b: Any) -> None:
    assert diff({"v": a}, {"v": b}) == [{"op": "replace", "path": "/v", "value": b}]


def test_lists_shrink_from_the_end() -> None:
    ops = diff({"l": [1, 2, 3, 4]}, {"l": [1, 9]})
    assert ops == [
        {"op": "replace", "path": "/l/1", "value": 9},
        {"op": "remove", "path": "/l/3"},
        {"op": "remove", "path": "/l/2"},
    ]
    assert apply({"l": [1, 2, 3, 4]}, ops) == {"l": [1, 9]}


def test_apply_refuses_what_does_not_fit() -> None:
    with pytest.raises(PatchError, match="no such member"):
        apply({"a": 1}, [{"op": "remove", "path": "/b"}])
    with pytest.raises(PatchError, match="parent does not exist"):
        apply({"a": 1}, [{"op": "add", "path": "/x/y", "value": 1}])
    with pytest.raises(PatchError, match="out of range"):
        apply({"l": []}, [{"op": "replace", "path": "/l/0", "value": 1}])


def test_lenient_apply_adds_what_a_replace_finds_missing_and_skips_missing_removals() -> None:
    ops = [
        {"op": "replace", "path": "/spec/replicas", "value": 2},
        {"op": "remove", "path": "/spec/gone"},
        {"op": "add", "path": "/status/x", "value": 1},
    ]
    assert apply({"spec": {}}, ops, lenient=True) == {"spec": {"replicas": 2}}


def test_apply_leaves_its_input_alone() -> None:
    doc = {"a": {"b": [1]}}
    apply(doc, [{"op": "add", "path": "/a/b/-", "value": 2}])
    assert doc == {"a": {"b": [1]}}
