"""Collections (F-01, G-19, G-20), includeWhen (G-23) and readyWhen (G-24, N-33): the
environment each expression sees, its result type, and the messages."""

from __future__ import annotations

from typing import Any

import pytest
from test_builder_fixtures import build, build_error, configmap, resource, rgd

from kro.graph.build_errors import DependencyGraphError, ResourceValidationError
from kro.graph.model import NodeType

TIERS = [{"tier": "${schema.spec.tiers}"}]


def coll(
    name: str = "${schema.spec.name}-${tier}", for_each: Any = None, **extra: Any
) -> dict[str, Any]:
    return configmap("cms", name=name, forEach=for_each or TIERS, **extra)


def test_collection_node() -> None:
    graph = build(
        rgd(
            coll(data={"tier": "${tier}"}),
            configmap("summary", name="s", data={"count": "${string(size(cms))}"}),
        )
    )
    node = graph.nodes["cms"]
    assert node.type is NodeType.COLLECTION
    assert [d.name for d in node.for_each] == ["tier"]
    assert node.for_each[0].expression.expression == "schema.spec.tiers"
    assert graph.nodes["summary"].dependencies == ("cms",)
    assert graph.environment.variables["cms"].kind == "list"


def test_iterators_are_typed_by_the_list_element() -> None:
    build(rgd(coll(name="x-${string(p + 1)}", for_each=[{"p": "${schema.spec.ports}"}])))
    err = build_error(rgd(coll(name="x-${p}", for_each=[{"p": "${schema.spec.ports}"}])))
    assert "found no matching overload for '_+_' applied to '(string, int)'" in str(err)


def test_dyn_lists_give_dyn_iterators() -> None:
    node = build(rgd(coll(name="x-${string(c.k)}", for_each=[{"c": "${schema.spec.config}"}])))
    assert node.nodes["cms"].for_each[0].expression.output_type.kind == "dyn"


def test_collections_can_iterate_over_other_collections() -> None:
    graph = build(
        rgd(
            coll(),
            configmap("copies", name="copy-${c.metadata.name}", forEach=[{"c": "${cms}"}]),
        )
    )
    assert graph.nodes["copies"].dependencies == ("cms",)
    assert graph.topological_order == ("cms", "copies")


def test_two_dimensions_must_both_reach_the_identity() -> None:
    dims = [{"a": "${schema.spec.tiers}"}, {"b": "${schema.spec.ports}"}]
    graph = build(rgd(coll(name="${a}-${string(b)}", for_each=dims)))
    assert [d.name for n in graph.nodes.values() for d in n.for_each] == ["a", "b"]


def test_namespace_counts_for_the_identity_of_namespaced_kinds() -> None:
    template = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x-${a}", "namespace": "${b}"},
    }
    dims = [{"a": "${schema.spec.tiers}"}, {"b": "${schema.spec.tiers}"}]
    node = build(rgd(resource("cms", template, forEach=dims))).nodes["cms"]
    assert ([d.name for d in node.for_each], node.namespaced) == (["a", "b"], True)


@pytest.mark.parametrize(
    ("for_each", "name", "detail", "rule"),
    [
        ([{"tier": "${schema.spec.name}"}], None,
         'forEach iterator "tier" must return a list, got "string"', "G-19"),
        ([{"tier": "${schema.spec.labels}"}], None,
         'forEach iterator "tier" must return a list, got "map(string, string)"', "G-19"),
        ([{"a": "${schema.spec.tiers}"}, {"b": "${a}"}], "${a}-${b}",
         'forEach iterator "b" cannot reference other iterators [a] - forEach iterators are '
         "independent (cartesian product)", "G-19"),
        ([{"tier": "x-${schema.spec.name}"}], None,
         'forEach iterator "tier": only standalone expressions are allowed', "C-07"),
        ([{"tier": 3}], None,
         'forEach iterator "tier": only standalone expressions are allowed', "C-07"),
        (TIERS, "${schema.spec.name}",
         "all forEach dimensions must be used to produce a unique resource identity, "
         "missing: [tier]", "G-20"),
        ([{"a": "${schema.spec.tiers}"}, {"b": "${schema.spec.ports}"}], "${a}",
         "all forEach dimensions must be used to produce a unique resource identity, "
         "missing: [b]", "G-20"),
    ],
    ids=["string", "map", "cross-reference", "not-standalone", "not-a-string", "identity",
         "identity-second-dimension"],
)  # fmt: skip
def test_for_each_errors(for_each: Any, name: str | None, detail: str, rule: str) -> None:
    entry = coll(for_each=for_each) if name is None else coll(name=name, for_each=for_each)
    err = build_error(rgd(entry))
    assert isinstance(err, ResourceValidationError)
    assert str(err) == f'failed to validate resource "cms": node "cms": {detail}'
    assert (err.rule, err.resource_id) == (rule, "cms")


def test_for_each_unknown_identifier() -> None:
    err = build_error(rgd(coll(for_each=[{"tier": "${foo}"}])))
    assert isinstance(err, DependencyGraphError)
    assert str(err) == (
        'failed to build dependency graph: node "cms": forEach iterator "tier": references '
        "unknown identifiers: [foo]"
    )
    assert (err.field_path, err.expression) == ("forEach.tier", "foo")


def test_omit_is_not_allowed_in_for_each() -> None:
    err = build_error(rgd(coll(for_each=[{"tier": "${[omit()]}"}])), omit_function=True)
    assert str(err) == (
        'failed to validate resource "cms": node "cms": forEach iterator "tier": omit() can '
        "only be used in resource template expressions"
    )
    assert err.rule == "C-31"


def test_collection_size_limit_is_carried_on_the_graph() -> None:
    assert build(rgd(coll()), max_collection_size=7).max_collection_size == 7


# --- includeWhen ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "condition",
    [
        "${schema.spec.enabled}",
        "${schema.spec.?enabled}",
        "${schema.spec.config.enabled}",
        "${other.data.x == 'y'}",
    ],
    ids=["bool", "optional-bool", "dyn", "reads-a-resource"],
)
def test_include_when_accepts(condition: str) -> None:
    graph = build(rgd(configmap("other", name="o"), configmap("cm", includeWhen=[condition])))
    assert len(graph.nodes["cm"].include_when) == 1


def test_include_when_adds_dependencies() -> None:
    graph = build(rgd(configmap("cm", includeWhen=["${other.data.x == 'y'}"]), configmap("other")))
    assert graph.nodes["cm"].dependencies == ("other",)
    assert graph.topological_order == ("other", "cm")


@pytest.mark.parametrize(
    ("condition", "detail", "rule"),
    [
        ("${schema.spec.name}",
         'includeWhen expression "schema.spec.name" in resource "cm" must return bool or '
         'optional_type(bool), but returns "string"', "G-23"),
        ("${schema.spec.?name}",
         'includeWhen expression "schema.spec.?name" in resource "cm" must return bool or '
         'optional_type(bool), but returns "optional_type(string)"', "G-23"),
        ("${schema.spec.enabled} ", 'resource "cm" includeWhen[0]: only standalone expressions '
         "are allowed", "C-07"),
    ],
    ids=["string", "optional-string", "not-standalone"],
)  # fmt: skip
def test_include_when_errors(condition: str, detail: str, rule: str) -> None:
    err = build_error(rgd(configmap("cm", includeWhen=[condition])))
    assert isinstance(err, ResourceValidationError)
    assert str(err) == f'failed to validate resource "cm": {detail}'
    assert (err.rule, err.field_path) == (rule, "includeWhen[0]")


@pytest.mark.parametrize(
    ("condition", "unknown"),
    [
        ("${tier == 'a'}", "tier"),
        ("${each.data.x == 'a'}", "each"),
        ("${runtime.condition(schema, 'Ready').status == 'True'}", "runtime"),
    ],
    ids=["iterator", "each", "runtime"],
)
def test_include_when_scope(condition: str, unknown: str) -> None:
    err = build_error(rgd(coll(includeWhen=[condition])))
    assert str(err) == (
        'failed to build dependency graph: resource "cms" includeWhen: references unknown '
        f"identifiers: [{unknown}]"
    )


def test_omit_is_not_allowed_in_include_when() -> None:
    err = build_error(
        rgd(configmap("cm", includeWhen=["${schema.spec.enabled ? true : omit()}"])),
        omit_function=True,
    )
    assert "omit() can only be used in resource template expressions" in str(err)


# --- readyWhen -----------------------------------------------------------------------------------


def test_ready_when_of_a_resource_reads_only_itself() -> None:
    graph = build(rgd(configmap("cm", readyWhen=["${cm.data.ready == 'true'}"])))
    (ready,) = graph.nodes["cm"].ready_when
    assert ready.roots == frozenset({"cm"})
    assert graph.nodes["cm"].dependencies == ()


def test_ready_when_of_a_collection_reads_each() -> None:
    graph = build(rgd(coll(readyWhen=["${each.data.x == 'y'}"])))
    assert graph.nodes["cms"].ready_when[0].roots == frozenset({"each"})


def test_ready_when_of_a_selector_external_ref_reads_each() -> None:
    # N-33: kro-py binds each item as `each` (docs/compatibility.md).
    entry = {
        "id": "cms",
        "externalRef": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"selector": {"matchLabels": {"app": "x"}}},
        },
        "readyWhen": ["${each.data.ready == 'true'}"],
    }
    graph = build(rgd(entry))
    assert graph.nodes["cms"].type is NodeType.EXTERNAL_COLLECTION
    assert graph.nodes["cms"].ready_when[0].roots == frozenset({"each"})
    entry["readyWhen"] = ["${cms.size() > 0}"]
    err = build_error(rgd(entry))
    assert str(err).endswith('resource "cms" readyWhen: references unknown identifiers: [cms]')


def test_ready_when_of_a_scalar_external_ref_reads_itself() -> None:
    entry = {
        "id": "cfg",
        "externalRef": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}},
        "readyWhen": ["${cfg.data.?ready.orValue('') == 'true'}"],
    }
    assert build(rgd(entry)).nodes["cfg"].ready_when[0].roots == frozenset({"cfg"})


@pytest.mark.parametrize(
    ("entry", "unknown"),
    [
        (configmap("cm", readyWhen=["${schema.spec.enabled}"]), "schema"),
        (configmap("cm", readyWhen=["${other.data.x == 'y'}"]), "other"),
        (configmap("cm", readyWhen=["${other.metadata.name == cm.metadata.name}"]), "other"),
        (coll(readyWhen=["${cms.size() > 0}"]), "cms"),
        (coll(readyWhen=["${tier == 'a'}"]), "tier"),
        (coll(readyWhen=["${each.data.x == other.data.x}"]), "other"),
    ],
    ids=["schema", "other-resource", "other-and-self", "collection-own-id",
         "collection-iterator", "collection-other"],
)  # fmt: skip
def test_ready_when_scope(entry: dict[str, Any], unknown: str) -> None:
    err = build_error(rgd(entry, configmap("other", name="o")))
    rid = entry["id"]
    assert isinstance(err, ResourceValidationError)
    assert str(err) == (
        f'failed to validate resource "{rid}": resource "{rid}" readyWhen: references unknown '
        f"identifiers: [{unknown}]"
    )
    assert (err.rule, err.field_path) == ("G-24", "readyWhen[0]")


def test_ready_when_must_return_bool() -> None:
    err = build_error(rgd(configmap("cm", readyWhen=["${cm.data}"])))
    assert str(err) == (
        'failed to validate resource "cm": readyWhen expression "cm.data" in resource "cm" must '
        'return bool or optional_type(bool), but returns "map(string, string)"'
    )
    assert err.rule == "G-24"


def test_ready_when_type_errors_keep_the_engine_message() -> None:
    err = build_error(rgd(configmap("cm", readyWhen=["${cm.data.x + 1 > 0}"])))
    assert str(err).startswith(
        'failed to validate resource "cm": failed to type-check readyWhen expression '
        '"cm.data.x + 1 > 0": '
    )
    assert "found no matching overload" in str(err)
