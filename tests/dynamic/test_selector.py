"""LabelSelector: Kubernetes matching semantics, both input forms, canonical string form."""

from __future__ import annotations

from typing import Any

import pytest

from kro.dynamic import LabelSelector, Requirement, SelectorError

LABELS = {"app": "web", "tier": "frontend", "env": "prod"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app=db", False),
        ("app!=db", True),
        ("app!=web", False),
        ("missing!=x", True),
        ("env in (prod,staging)", True),
        ("env in (staging)", False),
        ("env notin (staging, dev)", True),
        ("env notin (prod)", False),
        ("missing notin (x)", True),
        ("missing in (x)", False),
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("app=web,tier=frontend", True),
        ("app=web,tier=backend", False),
        ("app=web,app=db", False),
        (" app = web , env in ( prod ) ", True),
        ("empty=", False),
    ],
    ids=lambda v: repr(v) if isinstance(v, str) else None,
)
def test_string_selector_matches_like_kubernetes(text: str, expected: bool) -> None:
    assert LabelSelector.parse(text).matches(LABELS) is expected


def test_empty_value_selects_empty_label() -> None:
    assert LabelSelector.parse("flag=").matches({"flag": ""})
    assert not LabelSelector.parse("flag=").matches({})


def test_empty_selector_matches_everything() -> None:
    selector = LabelSelector.parse("")
    assert selector.is_empty
    assert selector.matches({})
    assert LabelSelector.from_dict({}).matches({"a": "b"})


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"matchLabels": {"app": "web"}}, True),
        ({"matchLabels": {"app": "web", "env": "dev"}}, False),
        ({"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]}, True),
        ({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, False),
        (
            {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}],
            },
            True,
        ),
    ],
    ids=["labels", "labels-mismatch", "in", "notin", "exists", "does-not-exist", "both"],
)
def test_dict_selector_matches(spec: dict[str, Any], expected: bool) -> None:
    assert LabelSelector.from_dict(spec).matches(LABELS) is expected


def test_format_is_canonical_and_round_trips() -> None:
    selector = LabelSelector.parse("z in (b,a), !gone, app=web, env notin (x), tier, a!=b")
    assert str(selector) == "a!=b,app=web,env!=x,!gone,tier,z in (a,b)"
    assert LabelSelector.parse(str(selector)) == selector


def test_equal_selectors_are_equal_and_hash_equal() -> None:
    a = LabelSelector.parse("app=web,env in (prod,dev)")
    b = LabelSelector.from_dict(
        {
            "matchExpressions": [{"key": "env", "operator": "In", "values": ["dev", "prod"]}],
            "matchLabels": {"app": "web"},
        }
    )
    assert a == b
    assert hash(a) == hash(b)


def test_to_dict_uses_match_labels_for_equality() -> None:
    selector = LabelSelector.parse("app=web,env in (a,b),!gone")
    assert selector.to_dict() == {
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["a", "b"]},
            {"key": "gone", "operator": "DoesNotExist"},
        ],
    }
    assert LabelSelector.from_dict(selector.to_dict()) == selector


def test_from_labels_is_equality_on_each() -> None:
    selector = LabelSelector.from_labels({"kro.run/instance-id": "u1", "kro.run/node-id": "n"})
    assert str(selector) == "kro.run/instance-id=u1,kro.run/node-id=n"
    assert selector.matches({"kro.run/instance-id": "u1", "kro.run/node-id": "n", "x": "y"})
    assert not selector.matches({"kro.run/instance-id": "u1"})


@pytest.mark.parametrize(
    "text",
    [
        "app in ()",
        "app in (a",
        "app in a",
        "=web",
        "app=web,",
        "app>1",
        "app=web extra",
        "-bad=x",
        "app=-bad",
        "Bad_Prefix.com/app=x",
        f"app={'v' * 64}",
        "!",
    ],
)
def test_malformed_strings_are_rejected(text: str) -> None:
    with pytest.raises(SelectorError):
        LabelSelector.parse(text)


@pytest.mark.parametrize(
    "spec",
    [
        {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
        {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
        {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
        {"matchExpressions": "a"},
        {"matchLabels": {"a": "b c"}},
    ],
    ids=["gt", "in-empty", "exists-values", "not-a-list", "bad-value"],
)
def test_malformed_dicts_are_rejected(spec: dict[str, Any]) -> None:
    with pytest.raises(SelectorError):
        LabelSelector.from_dict(spec)


def test_selector_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="invalid label key"):
        Requirement("", "Exists")
