"""Builder stage 1 and 3: naming and shape of the RGD (G-01..G-03, A-14, A-17) and the
per-resource object checks (G-05..G-09), with upstream's messages and the error fields."""

from __future__ import annotations

from typing import Any

import pytest
from test_builder_fixtures import build, build_error, configmap, resource, rgd

from kro.graph.build_errors import ResourceBuildError, RGDValidationError

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}


@pytest.mark.parametrize(
    ("kind", "valid"),
    [
        ("App", True),
        ("WebApp2", True),
        ("app", False),
        ("Web-App", False),
        ("Web_App", False),
        ("2App", False),
        ("", False),
    ],
    ids=["simple", "camel-digits", "lowercase", "dash", "underscore", "digit-first", "empty"],
)
def test_kind_must_be_upper_camel_case(kind: str, valid: bool) -> None:
    obj = rgd(kind=kind)
    if valid:
        assert build(obj).instance.kind == kind
        return
    err = build_error(obj)
    assert isinstance(err, RGDValidationError)
    assert err.rule == "G-01"
    assert str(err) == (
        "failed to validate resourcegraphdefinition: naming convention violation: "
        f"kind '{kind}' is not a valid KRO kind name: must be UpperCamelCase"
    )
    assert err.rgd == "test-rgd"


@pytest.mark.parametrize(
    ("resources", "detail", "resource_id"),
    [
        (
            [configmap("my-cm")],
            "naming convention violation: id my-cm is not a valid KRO resource id: "
            "must be lower camelCase",
            "my-cm",
        ),
        (
            [configmap("MyCm")],
            "naming convention violation: id MyCm is not a valid KRO resource id: "
            "must be lower camelCase",
            "MyCm",
        ),
        (
            [configmap("my_cm")],
            "naming convention violation: id my_cm is not a valid KRO resource id: "
            "must be lower camelCase",
            "my_cm",
        ),
        (
            [configmap("schema")],
            "naming convention violation: id schema is a reserved keyword in KRO",
            "schema",
        ),
        (
            [configmap("namespace")],
            "naming convention violation: id namespace is a reserved keyword in KRO",
            "namespace",
        ),
        (
            [configmap("each")],
            "naming convention violation: id each is a reserved keyword in KRO",
            "each",
        ),
        (
            [configmap("while")],
            "naming convention violation: id while is a reserved keyword in KRO",
            "while",
        ),
        (
            [configmap("cm"), configmap("cm", name="y")],
            "naming convention violation: found duplicate resource IDs cm",
            None,
        ),
    ],
    ids=["dash", "upper-first", "underscore", "reserved-kro", "reserved-namespace",
         "reserved-each", "reserved-cel", "duplicate"],
)  # fmt: skip
def test_resource_ids(resources: list[dict[str, Any]], detail: str, resource_id: str) -> None:
    err = build_error(rgd(*resources))
    assert isinstance(err, RGDValidationError)
    assert err.rule == "G-02"
    assert str(err) == f"failed to validate resourcegraphdefinition: {detail}"
    if resource_id is not None:
        assert err.resource_id == resource_id


def test_graphengine_is_a_reserved_resource_id() -> None:  # V-07
    err = build_error(rgd(configmap("graphengine")))
    assert isinstance(err, RGDValidationError)
    assert str(err) == (
        "failed to validate resourcegraphdefinition: naming convention violation: "
        "id graphengine is a reserved keyword in KRO"
    )
    assert (err.rule, err.resource_id) == ("V-07", "graphengine")


def test_graphengine_stays_a_valid_iterator_name() -> None:  # V-07 reserves it as an id only
    cms = configmap("cms", name="${graphengine}", forEach=[{"graphengine": "${schema.spec.tiers}"}])
    graph = build(rgd(cms))
    assert [d.name for d in graph.nodes["cms"].for_each] == ["graphengine"]


def test_reserved_words_are_case_sensitive() -> None:
    graph = build(rgd(configmap("schemaMap"), configmap("selfCm", name="other")))
    assert graph.topological_order == ("schemaMap", "selfCm")


FOR_EACH_CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "${x}"}}


@pytest.mark.parametrize(
    ("for_each", "detail"),
    [
        (
            [{"Tier": "${schema.spec.tiers}"}],
            'naming convention violation: resource "cms": forEach iterator "Tier" is not a '
            "valid KRO iterator name: must be lower camelCase",
        ),
        (
            [{"each": "${schema.spec.tiers}"}],
            'naming convention violation: resource "cms": forEach iterator "each" is a '
            "reserved keyword in KRO",
        ),
        (
            [{"other": "${schema.spec.tiers}"}],
            'naming convention violation: resource "cms": forEach iterator "other" conflicts '
            "with a resource id",
        ),
        (
            [{"a": "${schema.spec.tiers}"}, {"a": "${schema.spec.ports}"}],
            'naming convention violation: resource "cms": forEach iterator "a" is declared '
            "more than once",
        ),
        (
            [{"a": "${schema.spec.tiers}", "b": "${schema.spec.tiers}"}],
            'resource "cms": forEach[0] must have exactly one iterator',
        ),
    ],
    ids=["upper", "reserved", "shadows-id", "duplicate", "two-keys"],
)
def test_for_each_iterator_names(for_each: list[dict[str, str]], detail: str) -> None:
    err = build_error(
        rgd(resource("cms", FOR_EACH_CM, forEach=for_each), configmap("other", name="o"))
    )
    assert isinstance(err, RGDValidationError)
    assert err.rule == "G-03"
    assert str(err) == f"failed to validate resourcegraphdefinition: {detail}"
    assert err.resource_id == "cms"


def test_for_each_dimension_limit_is_configurable() -> None:
    dims = [{f"d{i}": "${schema.spec.tiers}"} for i in range(11)]
    name = "-".join(f"${{d{i}}}" for i in range(11))
    template = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    err = build_error(rgd(resource("cms", template, forEach=dims)))
    assert str(err) == (
        "failed to validate resourcegraphdefinition: "
        'resource "cms": forEach cannot have more than 10 dimensions, got 11'
    )
    assert err.rule == "G-03"
    graph = build(rgd(resource("cms", template, forEach=dims)), max_collection_dimension_size=11)
    assert len(graph.nodes["cms"].for_each) == 11


SELECTOR_REF = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"selector": {"matchLabels": {"app": "x"}}},
}


@pytest.mark.parametrize(
    ("entry", "detail", "rule"),
    [
        (
            {"id": "cm"},
            'resource "cm": exactly one of template or externalRef must be provided',
            "A-14",
        ),
        (
            {"id": "cm", "template": CM, "externalRef": CM},
            'resource "cm": cannot use externalRef with template',
            "A-14",
        ),
        (
            {"id": "cm", "externalRef": SELECTOR_REF, "forEach": [{"a": "${schema.spec.tiers}"}]},
            'resource "cm": cannot use externalRef with forEach',
            "A-17",
        ),
        (
            {
                "id": "cm",
                "externalRef": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "a", "selector": {}},
                },
            },
            'resource "cm": exactly one of name or selector must be provided',
            "A-17",
        ),
        (
            {"id": "cm", "externalRef": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}},
            'resource "cm": exactly one of name or selector must be provided',
            "A-17",
        ),
    ],
    ids=["neither", "both", "external-foreach", "name-and-selector", "no-name-no-selector"],
)
def test_resource_shape(entry: dict[str, Any], detail: str, rule: str) -> None:
    err = build_error(rgd(entry))
    assert isinstance(err, RGDValidationError)
    assert (str(err), err.rule, err.resource_id) == (
        f"failed to validate resourcegraphdefinition: {detail}",
        rule,
        "cm",
    )


@pytest.mark.parametrize(
    ("template", "detail", "rule"),
    [
        ({"kind": "ConfigMap", "metadata": {}}, "apiVersion field not found", "G-05"),
        ({"apiVersion": 1, "kind": "ConfigMap", "metadata": {}}, "apiVersion field is not a string",
         "G-05"),
        ({"apiVersion": "v1", "metadata": {}}, "kind field not found", "G-05"),
        ({"apiVersion": "v1", "kind": ["x"], "metadata": {}}, "kind field is not a string",
         "G-05"),
        ({"apiVersion": "v1", "kind": "ConfigMap"}, "metadata field not found", "G-05"),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": "x"},
         "metadata field is not a map", "G-05"),
        ({"apiVersion": "a/b/c", "kind": "ConfigMap", "metadata": {}},
         'invalid apiVersion format "a/b/c"', "G-06"),
        ({"apiVersion": "", "kind": "ConfigMap", "metadata": {}}, 'invalid apiVersion format ""',
         "G-06"),
        ({"apiVersion": "v1", "kind": "Config_Map", "metadata": {}},
         'invalid kind "Config_Map": the lowercased kind must be a valid DNS-1035 label', "G-06"),
    ],
    ids=["no-apiversion", "apiversion-type", "no-kind", "kind-type", "no-metadata",
         "metadata-type", "apiversion-slashes", "apiversion-empty", "kind-dns1035"],
)  # fmt: skip
def test_template_structure(template: dict[str, Any], detail: str, rule: str) -> None:
    err = build_error(rgd(resource("cm", template)))
    assert isinstance(err, ResourceBuildError)
    assert str(err) == (
        f'failed to build resource "cm": resource cm is not a valid Kubernetes object: {detail}'
    )
    assert (err.rule, err.resource_id) == (rule, "cm")


def test_template_must_be_a_map() -> None:
    err = build_error(rgd({"id": "cm", "template": "apiVersion: v1"}))
    assert err.rule == "G-05"
    assert "template must be a map" in str(err)


def test_versions_outside_the_vN_convention_are_accepted_when_known() -> None:
    err = build_error(
        rgd(resource("db", {"apiVersion": "example.com/v1api20200601", "kind": "Db",
                            "metadata": {"name": "x"}}))
    )  # fmt: skip
    assert err.rule == "G-07"  # parsed fine; only the schema is unknown


def test_unknown_kind_has_no_schema() -> None:
    err = build_error(
        rgd(resource("db", {"apiVersion": "example.com/v1", "kind": "Database", "metadata": {}}))
    )
    assert isinstance(err, ResourceBuildError)
    assert str(err) == (
        'failed to build resource "db": failed to get schema for resource db: schema not found'
    )
    assert (err.rule, err.resource_id) == ("G-07", "db")


NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}


@pytest.mark.parametrize(
    ("scope", "entry", "detail"),
    [
        (
            None,
            resource("ns", {**NAMESPACE, "metadata": {"name": "x", "namespace": "y"}}),
            'resource "ns" is cluster-scoped and must not set metadata.namespace',
        ),
        (
            None,
            resource("ns", {**NAMESPACE,
                            "metadata": {"name": "x", "namespace": "${schema.spec.name}"}}),
            'resource "ns" is cluster-scoped and must not set metadata.namespace',
        ),
        (
            "Cluster",
            configmap("cm"),
            'resource "cm" is namespaced and must set metadata.namespace when the instance CRD '
            "is cluster-scoped",
        ),
        (
            "Cluster",
            resource("cm", {**CM, "metadata": {"name": "x", "namespace": "  "}}),
            'resource "cm" is namespaced and must set metadata.namespace when the instance CRD '
            "is cluster-scoped",
        ),
        (
            "Cluster",
            {"id": "cm", "externalRef": {"apiVersion": "v1", "kind": "ConfigMap",
                                         "metadata": {"name": "x"}}},
            'resource "cm" is namespaced and must set metadata.namespace when the instance CRD '
            "is cluster-scoped",
        ),
        (
            None,
            {"id": "ns", "externalRef": {"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": "x", "namespace": "y"}}},
            'resource "ns" is cluster-scoped and must not set metadata.namespace',
        ),
    ],
    ids=["cluster-kind-with-namespace", "cluster-kind-with-expression",
         "namespaced-kind-in-cluster-instance", "blank-namespace", "external-scalar",
         "external-cluster-kind"],
)  # fmt: skip
def test_namespace_and_scope(scope: str | None, entry: dict[str, Any], detail: str) -> None:
    err = build_error(rgd(entry, scope=scope))
    assert isinstance(err, ResourceBuildError)
    assert str(err) == f'failed to build resource "{entry["id"]}": {detail}'
    assert (err.rule, err.field_path) == ("G-08", "metadata.namespace")


@pytest.mark.parametrize(
    "entry",
    [
        resource("cm", {**CM, "metadata": {"name": "x", "namespace": "${schema.spec.name}"}}),
        {"id": "cms", "externalRef": SELECTOR_REF},
        resource("ns", NAMESPACE),
    ],
    ids=["namespace-set", "selector-ref-lists-all-namespaces", "cluster-scoped-kind"],
)
def test_cluster_scoped_instance_accepts(entry: dict[str, Any]) -> None:
    graph = build(rgd(entry, scope="Cluster"))
    assert not graph.instance.namespaced


@pytest.mark.parametrize(
    ("key", "name", "detail"),
    [
        ("labels", "kro.run/owned",
         'invalid label for resource "cm". labels with prefix "kro.run/" are reserved for '
         "internal use"),
        ("labels", "internal.kro.run/x",
         'invalid label for resource "cm". labels with prefix "internal.kro.run/" are reserved '
         "for internal use"),
        ("annotations", "kro.run/reconcile",
         'invalid annotation for resource "cm". annotations with prefix "kro.run/" are reserved '
         "for internal use"),
    ],
    ids=["label", "internal-label", "annotation"],
)  # fmt: skip
def test_reserved_metadata_prefixes(key: str, name: str, detail: str) -> None:
    err = build_error(rgd(resource("cm", {**CM, "metadata": {"name": "x", key: {name: "v"}}})))
    assert str(err) == f'failed to build resource "cm": {detail}'
    assert (err.rule, err.field_path) == ("G-09", f"metadata.{key}")


def test_nested_pod_template_labels_are_not_checked() -> None:
    template = {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "x", "labels": {"example.com/kro.run": "ok"}},
        "template": {"metadata": {"labels": {"kro.run/whatever": "fine"}}},
    }
    assert "tpl" in build(rgd(resource("tpl", template))).nodes


def test_spec_may_be_given_without_the_object_around_it() -> None:
    obj = rgd(configmap("cm"))
    graph = build(obj["spec"])
    assert graph.rgd_name == ""
    assert graph.topological_order == ("cm",)


def test_schema_block_is_required() -> None:
    err = build_error({"resources": []})
    assert err.rule == "A-02"


def test_resources_may_be_empty_or_absent() -> None:
    obj = rgd()
    del obj["spec"]["resources"]
    graph = build(obj)
    assert graph.nodes == {}
    assert graph.topological_order == ()
