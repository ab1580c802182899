"""kro.controllers.permissions: the rules a graph needs (what `kro generate rbac` prints and the
pre-flight checks), built offline from small RGDs, and how missing permissions are worded."""

from __future__ import annotations

from typing import Any

import pytest

from kro.controllers.permissions import (
    Permission,
    PolicyRule,
    describe_missing,
    required_permissions,
    required_rules,
    rules_for,
)
from kro.graph.builder import build_graph
from kro.graph.model import Graph
from kro.graph.options import BuildOptions
from kro.graph.resolver import OfflineSchemaResolver

RESOLVER = OfflineSchemaResolver.from_files()
READ = ["get", "list", "watch"]
WRITE = ["get", "list", "watch", "create", "patch", "delete"]
INSTANCE = ["get", "list", "watch", "patch"]


def rgd(
    *resources: dict[str, Any],
    scope: str = "Namespaced",
    group: str | None = "example.com",
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "apiVersion": "v1alpha1",
        "kind": "Widget",
        "scope": scope,
        "spec": spec or {"name": "string | default=w", "items": '[]string | default=["a"]'},
    }
    if group is not None:
        schema["group"] = group
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "metadata": {"name": "widgets"},
        "spec": {"schema": schema, "resources": list(resources)},
    }


def template(node_id: str, api_version: str, kind: str, **extra: Any) -> dict[str, Any]:
    metadata = {"name": f"${{schema.metadata.name}}-{node_id}", **extra.pop("metadata", {})}
    return {
        "id": node_id,
        "template": {"apiVersion": api_version, "kind": kind, "metadata": metadata},
        **extra,
    }


def external(node_id: str, kind: str, metadata: dict[str, Any]) -> dict[str, Any]:
    return {"id": node_id, "externalRef": {"apiVersion": "v1", "kind": kind, "metadata": metadata}}


def build(spec: dict[str, Any]) -> Graph:
    return build_graph(spec, RESOLVER)


def rules(spec: dict[str, Any]) -> list[dict[str, list[str]]]:
    return [rule.to_dict() for rule in required_rules(build(spec))]


def rule(group: str, resources: list[str], verbs: list[str]) -> dict[str, list[str]]:
    return {"apiGroups": [group], "resources": resources, "verbs": verbs}


# --- the instance kind --------------------------------------------------------------------------


def test_instance_kind_is_watched_patched_and_its_status_applied() -> None:
    """V-04: the status is written by server-side apply, a PATCH of `/status`."""
    assert rules(rgd()) == [
        rule("example.com", ["widgets"], INSTANCE),
        rule("example.com", ["widgets/status"], ["patch"]),
    ]


def test_instance_kind_needs_no_create_update_delete_or_finalizers_subresource() -> None:
    needed = required_permissions(build(rgd(template("cm", "v1", "ConfigMap"))))
    widgets = {p for p in needed if p.group == "example.com"}
    assert {(p.resource, p.verb) for p in widgets} == {
        *(("widgets", v) for v in INSTANCE),
        ("widgets/status", "patch"),
    }


def test_instance_kind_in_the_default_group() -> None:
    assert rules(rgd(group=None))[0] == rule("kro.run", ["widgets"], INSTANCE)


def test_cluster_scoped_instance_kind_needs_the_same_rules() -> None:
    assert rules(rgd(scope="Cluster")) == rules(rgd())


# --- resources ----------------------------------------------------------------------------------


def test_template_resource_is_read_watched_applied_and_deleted() -> None:
    assert rules(rgd(template("deploy", "apps/v1", "Deployment")))[0] == rule(
        "apps", ["deployments"], WRITE
    )


def test_conditional_resource_needs_its_rule_too() -> None:
    spec = rgd(template("cm", "v1", "ConfigMap", includeWhen=["${schema.spec.name == 'x'}"]))
    assert rule("", ["configmaps"], WRITE) in rules(spec)


def test_cluster_scoped_kinds_from_a_namespaced_instance() -> None:
    spec = rgd(
        template("ns", "v1", "Namespace"),
        template("role", "rbac.authorization.k8s.io/v1", "ClusterRole"),
    )
    assert rules(spec) == [
        rule("", ["namespaces"], WRITE),
        rule("example.com", ["widgets"], INSTANCE),
        rule("example.com", ["widgets/status"], ["patch"]),
        rule("rbac.authorization.k8s.io", ["clusterroles"], WRITE),
    ]


def test_foreach_collection_is_never_read_by_name() -> None:
    spec = rgd(
        template(
            "cms",
            "v1",
            "ConfigMap",
            metadata={"name": "${schema.metadata.name}-${tier}"},
            forEach=[{"tier": "${schema.spec.items}"}],
        )
    )
    assert rules(spec)[0] == rule(
        "", ["configmaps"], ["list", "watch", "create", "patch", "delete"]
    )


def test_kinds_with_the_same_group_and_verbs_share_a_rule() -> None:
    spec = rgd(template("secret", "v1", "Secret"), template("cm", "v1", "ConfigMap"))
    assert rules(spec)[0] == rule("", ["configmaps", "secrets"], WRITE)


def test_rules_do_not_depend_on_the_order_of_resources() -> None:
    first = [
        template("svc", "v1", "Service"),
        template("deploy", "apps/v1", "Deployment"),
        external("cfg", "ConfigMap", {"name": "shared"}),
    ]
    assert rules(rgd(*first)) == rules(rgd(*reversed(first)))
    assert [r["apiGroups"] for r in rules(rgd(*first))] == [
        [""],
        [""],
        ["apps"],
        ["example.com"],
        ["example.com"],
    ]


# --- externalRefs -------------------------------------------------------------------------------


def test_external_ref_by_name_is_read_only() -> None:
    assert rules(rgd(external("cfg", "ConfigMap", {"name": "shared"})))[0] == rule(
        "", ["configmaps"], READ
    )


def test_external_ref_by_selector_is_listed_and_watched_only() -> None:
    spec = rgd(external("cfgs", "ConfigMap", {"selector": {"matchLabels": {"app": "x"}}}))
    assert rules(spec)[0] == rule("", ["configmaps"], ["list", "watch"])


def test_a_kind_both_read_and_created_gets_the_union() -> None:
    spec = rgd(external("cfg", "Secret", {"name": "shared"}), template("mine", "v1", "Secret"))
    assert rules(spec)[0] == rule("", ["secrets"], WRITE)


# --- ownerReferences ----------------------------------------------------------------------------


def _owned(block: object) -> dict[str, Any]:
    reference: dict[str, object] = {
        "apiVersion": "example.com/v1alpha1",
        "kind": "Widget",
        "name": "${schema.metadata.name}",
        "uid": "${schema.metadata.uid}",
    }
    if block is not None:
        reference["blockOwnerDeletion"] = block
    return template("cm", "v1", "ConfigMap", metadata={"ownerReferences": [reference]})


@pytest.mark.parametrize(
    ("block", "needed"),
    [(True, True), (False, False), (None, False)],
    ids=["blocking", "not-blocking", "unset"],
)
def test_blocking_owner_reference_to_the_instance_needs_its_finalizers(
    block: object, needed: bool
) -> None:
    finalizers = Permission("example.com", "widgets/finalizers", "update")
    assert (finalizers in required_permissions(build(rgd(_owned(block))))) is needed


# --- grouping and wording -----------------------------------------------------------------------


def test_rules_for_sorts_groups_resources_and_verbs() -> None:
    permissions = [
        Permission("apps", "deployments", "delete"),
        Permission("", "pods", "watch"),
        Permission("apps", "deployments", "get"),
        Permission("", "pods", "get"),
    ]
    assert rules_for(permissions) == [
        PolicyRule(("",), ("pods",), ("get", "watch")),
        PolicyRule(("apps",), ("deployments",), ("get", "delete")),
    ]


def test_missing_permissions_are_listed_by_resource_with_their_verbs() -> None:
    missing = [
        Permission("apps", "deployments", "patch"),
        Permission("", "services", "delete"),
        Permission("apps", "deployments", "create"),
        Permission("example.com", "widgets/status", "update"),
    ]
    assert describe_missing(missing) == (
        "missing permissions: services: delete; apps/deployments: create, patch; "
        "example.com/widgets/status: update"
    )


def test_one_removed_rule_is_described_as_that_rule() -> None:
    role = required_rules(build(rgd(template("deploy", "apps/v1", "Deployment"))))
    removed = role[0]
    assert describe_missing(removed.permissions()) == (
        "missing permissions: apps/deployments: get, list, watch, create, patch, delete"
    )


def test_the_pre_flight_counts_a_target_naming_the_hub_by_its_configured_name() -> None:
    """`--local-cluster-name=hub-a`: a resource targeted at `hub-a` is applied here, so the
    pre-flight needs its kind; under the default name `hub-a` is a member, checked there."""
    spec = rgd(
        template("cm", "v1", "ConfigMap"),
        {
            **template("deploy", "apps/v1", "Deployment"),
            "target": {"cluster": {"kubeconfigSecretName": "hub-a"}},
        },
    )
    graph = build_graph(spec, RESOLVER, options=BuildOptions(multi_cluster=True))
    here = {r.resources for r in required_rules(graph, "hub-a")}
    default = {r.resources for r in required_rules(graph)}
    assert ("deployments",) in here
    assert ("deployments",) not in default
    assert ("configmaps",) in default
