"""kro.graph.hashing: spec hash invariances (N-05, N-19) and GraphRevision names (B-06)."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kro.graph.hashing import (
    fnv1a_32,
    fnv1a_64,
    graph_revision_name,
    normalize_spec,
    spec_hash,
)


def spec() -> dict[str, Any]:
    return {
        "schema": {
            "apiVersion": "v1alpha1",
            "kind": "App",
            "spec": {"name": "string", "replicas": "integer | default=1"},
            "status": {"ready": "${deployment.status.readyReplicas}"},
        },
        "resources": [
            {
                "id": "deployment",
                "readyWhen": ["${deployment.status.a}", "${deployment.status.b}"],
                "includeWhen": ["${schema.spec.x}", "${schema.spec.y}"],
                "template": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"n": 1}},
            },
            {
                "id": "service",
                "template": {"apiVersion": "v1", "kind": "Service", "metadata": {}},
                "forEach": [{"a": "${schema.spec.as}"}, {"b": "${schema.spec.bs}"}],
            },
        ],
    }


@pytest.mark.parametrize(
    ("data", "expected"),
    [(b"", 0xCBF29CE484222325), (b"a", 0xAF63DC4C8601EC8C), (b"hello world", 0x779A65E7023CD2E7)],
    ids=["empty", "a", "hello-world"],
)
def test_fnv1a_64_vectors(data: bytes, expected: int) -> None:
    assert fnv1a_64(data) == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [(b"", 0x811C9DC5), (b"a", 0xE40C292C), (b"foobar", 0xBF9CF968)],
    ids=["empty", "a", "foobar"],
)
def test_fnv1a_32_vectors(data: bytes, expected: int) -> None:
    assert fnv1a_32(data) == expected


def test_hash_is_sixteen_lowercase_hex_digits() -> None:
    assert re.fullmatch(r"[0-9a-f]{16}", spec_hash(spec()))
    assert re.fullmatch(r"[0-9a-f]{16}", spec_hash({}))


def _reorder_resources(s: dict[str, Any]) -> None:
    s["resources"].reverse()


def _reorder_ready_when(s: dict[str, Any]) -> None:
    s["resources"][0]["readyWhen"].reverse()


def _reorder_include_when(s: dict[str, Any]) -> None:
    s["resources"][0]["includeWhen"].reverse()


def _explicit_defaults(s: dict[str, Any]) -> None:
    s["schema"]["group"] = "kro.run"
    s["schema"]["scope"] = "Namespaced"


def _empty_defaults(s: dict[str, Any]) -> None:
    s["schema"]["group"] = ""
    s["schema"]["scope"] = ""


def _empty_optional_lists(s: dict[str, Any]) -> None:
    s["resources"][1]["readyWhen"] = []
    s["resources"][1]["includeWhen"] = None
    s["schema"]["additionalPrinterColumns"] = []
    s["schema"]["shortNames"] = []
    s["schema"]["metadata"] = {"labels": {}, "annotations": None}


def _template_key_order(s: dict[str, Any]) -> None:
    template = s["resources"][0]["template"]
    s["resources"][0]["template"] = dict(reversed(list(template.items())))


INVARIANT = [
    _reorder_resources,
    _reorder_ready_when,
    _reorder_include_when,
    _explicit_defaults,
    _empty_defaults,
    _empty_optional_lists,
    _template_key_order,
]


@pytest.mark.parametrize("change", INVARIANT, ids=lambda f: f.__name__.strip("_"))
def test_changes_that_cannot_alter_the_graph_keep_the_hash(change: Any) -> None:
    changed = copy.deepcopy(spec())
    change(changed)
    assert spec_hash(changed) == spec_hash(spec())


def test_absent_and_empty_resources_hash_alike() -> None:
    base = {"schema": {"apiVersion": "v1", "kind": "A"}}
    assert spec_hash(base) == spec_hash({**base, "resources": []})
    assert spec_hash(base) == spec_hash({**base, "resources": None})


def _reorder_for_each(s: dict[str, Any]) -> None:
    s["resources"][1]["forEach"].reverse()


def _change_template(s: dict[str, Any]) -> None:
    s["resources"][0]["template"]["metadata"]["n"] = 2


def _change_kind(s: dict[str, Any]) -> None:
    s["schema"]["kind"] = "Other"


def _add_resource(s: dict[str, Any]) -> None:
    s["resources"].append({"id": "cm", "template": {"kind": "ConfigMap"}})


def _change_ready_when(s: dict[str, Any]) -> None:
    s["resources"][0]["readyWhen"][0] = "${true}"


def _change_group(s: dict[str, Any]) -> None:
    s["schema"]["group"] = "example.com"


def _printer_column_priority(s: dict[str, Any]) -> None:
    s["schema"]["additionalPrinterColumns"] = [{"name": "a", "type": "string", "jsonPath": ".a"}]


SENSITIVE = [
    _reorder_for_each,
    _change_template,
    _change_kind,
    _add_resource,
    _change_ready_when,
    _change_group,
    _printer_column_priority,
]


@pytest.mark.parametrize("change", SENSITIVE, ids=lambda f: f.__name__.strip("_"))
def test_meaningful_changes_change_the_hash(change: Any) -> None:
    changed = copy.deepcopy(spec())
    change(changed)
    assert spec_hash(changed) != spec_hash(spec())


def test_zero_priority_column_equals_an_unset_one() -> None:
    a, b = copy.deepcopy(spec()), copy.deepcopy(spec())
    a["schema"]["additionalPrinterColumns"] = [{"name": "a", "type": "t", "jsonPath": ".a"}]
    b["schema"]["additionalPrinterColumns"] = [
        {"name": "a", "type": "t", "jsonPath": ".a", "priority": 0, "description": ""}
    ]
    assert spec_hash(a) == spec_hash(b)


def test_normalize_does_not_mutate_its_input() -> None:
    original = spec()
    snapshot = copy.deepcopy(original)
    normalize_spec(original)
    assert original == snapshot


@given(st.permutations(range(5)), st.permutations(range(3)))
def test_hash_ignores_any_resource_and_ready_when_permutation(
    resource_order: list[int], ready_order: list[int]
) -> None:
    resources: list[dict[str, Any]] = [
        {
            "id": f"r{i}",
            "template": {"kind": "K", "i": i},
            "readyWhen": [f"${{r{i}.a{j}}}" for j in range(3)],
        }
        for i in range(5)
    ]
    schema = {"apiVersion": "v1", "kind": "A"}
    shuffled = [copy.deepcopy(resources[i]) for i in resource_order]
    for resource in shuffled:
        resource["readyWhen"] = [resource["readyWhen"][j] for j in ready_order]
    assert spec_hash({"schema": schema, "resources": shuffled}) == spec_hash(
        {"schema": schema, "resources": resources}
    )


# --- GraphRevision names -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rgd", "revision", "name"),
    [
        ("my-webapp", 1, "my-webapp-r00001"),
        ("somethings.kro.run", 42, "somethings.kro.run-r00042"),
        ("a", 123456, "a-r123456"),
    ],
    ids=["simple", "dotted", "six-digit-revision"],
)
def test_short_names(rgd: str, revision: int, name: str) -> None:
    assert graph_revision_name(rgd, revision) == name


def test_name_exactly_at_the_limit_is_not_shortened() -> None:
    rgd = "a" * (253 - len("-r00001"))
    assert graph_revision_name(rgd, 1) == rgd + "-r00001"


def test_long_names_are_truncated_with_a_hash_of_the_full_name() -> None:
    rgd = "a" * 250
    name = graph_revision_name(rgd, 7)
    suffix = f"-r00007-{fnv1a_32(rgd.encode()):08x}"
    assert name == "a" * (253 - len(suffix)) + suffix
    assert len(name) == 253
    assert graph_revision_name("a" * 249 + "b", 7) != name


def test_truncation_trims_trailing_dots_and_dashes() -> None:
    rgd = "a" * 236 + ".-" + "b" * 40
    name = graph_revision_name(rgd, 1)
    assert name.startswith("a" * 236 + "-r00001-")
    assert len(name) < 253


def test_a_prefix_that_trims_away_becomes_gr() -> None:
    rgd = "." * 300
    assert graph_revision_name(rgd, 1) == f"gr-r00001-{fnv1a_32(rgd.encode()):08x}"
