"""`kro generate rbac` knows about targets (issue #35, item 5; M-11, M-13): a resource or Graph
node whose target names a member cluster needs no hub rule for its kind (the member's own
credentials act there), so it is left out of the hub's roles and comment lines list, per
member cluster, what its credentials must allow. A target computed per instance may name the
hub: its kinds stay. A Graph's ServiceAccount gets `get` on each member's registry Secret, the
trust rule by which it reaches that member. A graph without targets is unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from test_rbac import run

GATE: Final = "--feature-gates=MultiCluster=true"
WRITE: Final = ["get", "list", "watch", "create", "patch", "delete"]
MEMBER_WRITE: Final = "get, list, create, patch, delete"


def template(api_version: str, kind: str, node_id: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": api_version, "kind": kind,
                            "metadata": {"name": "${schema.spec.name}-" + node_id}}
    return {**body, **spec}


def resource(node_id: str, body: dict[str, Any], target: str | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"id": node_id, "template": body}
    if target is not None:
        found["target"] = {"cluster": {"kubeconfigSecretName": target}}
    return found


def configmap(node_id: str, target: str | None = None) -> dict[str, Any]:
    return resource(node_id, template("v1", "ConfigMap", node_id, data={"a": "b"}), target)


def deployment(node_id: str, target: str | None = None) -> dict[str, Any]:
    spec = {"selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x"}},
                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    return resource(node_id, template("apps/v1", "Deployment", node_id, spec=spec), target)


def service(node_id: str, target: str | None = None) -> dict[str, Any]:
    body = template("v1", "Service", node_id, spec={"ports": [{"port": 80}]})
    return resource(node_id, body, target)


def rgd(*resources: dict[str, Any], target: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schema": {"apiVersion": "v1alpha1", "kind": "Fleet", "group": "example.com",
                   "spec": {"name": "string | default=x", "cluster": "string | default=x"}},
        "resources": list(resources),
    }
    if target is not None:
        spec["target"] = {"cluster": {"kubeconfigSecretName": target}}
    return {"apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
            "metadata": {"name": "fleet"}, "spec": spec}


def write(tmp_path: Path, document: dict[str, Any]) -> str:
    path = tmp_path / "input.yaml"
    path.write_text(yaml.safe_dump(document))
    return str(path)


def rules(role: dict[str, Any]) -> dict[tuple[str, str], list[str]]:
    return {
        (group, name): rule["verbs"]
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for name in rule["resources"]
    }


def comments(out: str) -> list[str]:
    return [line.removeprefix("# ") for line in out.splitlines() if line.startswith("#")]


def test_member_kinds_leave_the_hub_role_and_are_listed_per_member(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = rgd(configmap("settings"), deployment("app", "member-1"),
                   service("web", "member-2"), configmap("copy", "member-1"))
    code, out, err = run(capsys, "-f", write(tmp_path, document), GATE)
    assert code == 0, err
    (role,) = list(yaml.safe_load_all(out))
    granted = rules(role)
    assert ("apps", "deployments") not in granted
    assert ("", "services") not in granted
    assert granted[("", "configmaps")] == WRITE  # the hub's own ConfigMap keeps its rule
    assert granted[("example.com", "fleets")] == ["get", "list", "watch", "patch"]
    notes = comments(out)
    assert notes[0].startswith(
        "ResourceGraphDefinition fleet: resources that target a member cluster are left out of "
        "kro:controller:fleet: kro applies them with the member's own credentials"
    )
    assert notes[1:] == [
        f"  cluster member-1 (resources app, copy): configmaps: {MEMBER_WRITE}; "
        f"apps/deployments: {MEMBER_WRITE}",
        f"  cluster member-2 (resources web): services: {MEMBER_WRITE}",
    ]
    assert out.startswith("# ")  # the comments come before the role they speak of


def test_an_rgd_wide_target_leaves_only_the_instance_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "-f", write(tmp_path, rgd(deployment("app"), target="member-1")),
                         GATE)
    assert code == 0, err
    (role,) = list(yaml.safe_load_all(out))
    assert set(rules(role)) == {("example.com", "fleets"), ("example.com", "fleets/status")}
    assert f"  cluster member-1 (resources app): apps/deployments: {MEMBER_WRITE}" in comments(out)


def test_a_computed_target_keeps_its_kinds_on_the_hub(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = rgd(deployment("app", "${schema.spec.cluster}"))
    code, out, err = run(capsys, "-f", write(tmp_path, document), GATE)
    assert code == 0, err
    (role,) = list(yaml.safe_load_all(out))
    assert rules(role)[("apps", "deployments")] == WRITE
    (note,) = comments(out)
    assert note == (
        "ResourceGraphDefinition fleet: resources whose target is computed per instance (app): "
        "kro:controller:fleet keeps their kinds (a target may name the hub), and each member "
        f"cluster one names must allow there: apps/deployments: {MEMBER_WRITE}"
    )


def test_the_hub_named_as_a_target_is_the_hub(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = write(tmp_path, rgd(deployment("app")))
    _, expected, _ = run(capsys, "-f", plain, GATE)
    path = write(tmp_path, rgd(deployment("app", "hub-a")))
    code, out, err = run(capsys, "-f", path, GATE, "--local-cluster-name", "hub-a")
    assert code == 0, err
    assert out == expected
    _, elsewhere, _ = run(capsys, "-f", path, GATE)  # `hub-a` is a member when the hub is local
    assert "apps" not in str(rules(next(yaml.safe_load_all(elsewhere))))


def test_without_targets_the_new_flags_change_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, rgd(configmap("settings"), deployment("app")))
    for output in ("yaml", "json"):
        before = run(capsys, "-f", path, "-o", output)
        after = run(capsys, "-f", path, "-o", output, GATE, "--local-cluster-name", "hub-a",
                    "--cluster-secrets-namespace", "fleet")
        assert after == before
        assert "#" not in before[1]


def test_json_has_no_comments_they_go_to_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, rgd(configmap("settings"), deployment("app", "member-1")))
    code, out, err = run(capsys, "-f", path, GATE, "-o", "json")
    assert code == 0, err
    assert ("apps", "deployments") not in rules(json.loads(out))
    assert f"note:   cluster member-1 (resources app): apps/deployments: {MEMBER_WRITE}" in err


def test_a_target_without_the_gate_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "-f", write(tmp_path, rgd(deployment("app", "member-1"))))
    assert code == 1
    assert out == ""
    assert "requires the MultiCluster feature gate" in err


def graph_document(*nodes: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kro.run/v1alpha1", "kind": "Graph",
            "metadata": {"name": "shop", "namespace": "team"},
            "spec": {"serviceAccountName": "builder", "nodes": list(nodes)}}


def graph_node(node: dict[str, Any]) -> dict[str, Any]:
    node["template"]["metadata"] = {"name": f"shop-{node['id']}"}
    return node


def test_a_graphs_member_nodes_leave_its_roles_and_it_may_read_their_secrets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = graph_document(graph_node(configmap("settings")),
                              graph_node(deployment("app", "member-1")),
                              graph_node(service("web", "member-2")))
    code, out, err = run(capsys, "-f", write(tmp_path, document), GATE,
                         "--cluster-secrets-namespace", "fleet")
    assert code == 0, err
    role, binding, watcher, secrets, secrets_binding = yaml.safe_load_all(out)
    assert (role["kind"], role["metadata"]["namespace"]) == ("Role", "team")
    assert set(rules(role)) == {("", "configmaps")}
    assert set(rules(watcher)) == {("", "configmaps")}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "builder",
                                    "namespace": "team"}]
    assert secrets["kind"] == "Role"
    assert secrets["metadata"] == {"name": "kro:graph:team:shop:clusters", "namespace": "fleet"}
    assert secrets["rules"] == [{"apiGroups": [""], "resources": ["secrets"],
                                 "resourceNames": ["member-1", "member-2"], "verbs": ["get"]}]
    assert secrets_binding["roleRef"]["name"] == "kro:graph:team:shop:clusters"
    assert secrets_binding["subjects"] == binding["subjects"]
    notes = comments(out)
    assert any(
        n.startswith("  cluster member-1 (nodes app): apps/deployments: get, list, create, update")
        for n in notes
    )
    assert any("may get that cluster's Secret in fleet (M-13)" in n for n in notes)


def test_a_graphs_cluster_scoped_kind_in_a_member_needs_no_hub_cluster_role(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace = {"id": "ns", "template": {"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": "shop"}},
                 "target": {"cluster": {"kubeconfigSecretName": "member-1"}}}
    document = graph_document(graph_node(configmap("settings")), namespace)
    code, out, err = run(capsys, "-f", write(tmp_path, document), GATE)
    assert code == 0, err
    kinds = [d["kind"] for d in yaml.safe_load_all(out)]
    assert kinds == ["Role", "RoleBinding", "ClusterRole", "Role", "RoleBinding"]
    assert "a ClusterRole is needed" not in err
    assert "  cluster member-1 (nodes ns): namespaces: get, list, create, update, patch, delete" \
        in comments(out)


def test_comments_sit_before_the_role_they_speak_of(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = rgd(configmap("settings"))
    targeted = rgd(deployment("app", "member-1"))
    targeted["metadata"]["name"] = "remote"
    targeted["spec"]["schema"]["kind"] = "Remote"
    path = tmp_path / "both.yaml"
    path.write_text(yaml.safe_dump_all([plain, targeted]))
    code, out, err = run(capsys, "-f", str(path), GATE)
    assert code == 0, err
    _, alone, _ = run(capsys, "-f", write(tmp_path, plain), GATE)
    first, second = out.split("---\n")
    assert first == alone  # the untargeted RGD's role, as it prints alone
    assert second.startswith("# ResourceGraphDefinition remote: resources that target")
    names = [r["metadata"]["name"] for r in yaml.safe_load_all(out)]
    assert names == ["kro:controller:fleet", "kro:controller:remote"]


def test_a_graph_with_a_computed_target_keeps_its_kinds_and_says_what_to_grant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spread = graph_node(configmap("spread", "${settings.metadata.name}"))
    document = graph_document(graph_node(configmap("settings")), spread)
    code, out, err = run(capsys, "-f", write(tmp_path, document), GATE)
    assert code == 0, err
    kinds = [d["kind"] for d in yaml.safe_load_all(out)]
    assert kinds == ["Role", "RoleBinding", "ClusterRole"]  # no Secret Role: no literal member
    (note,) = comments(out)
    assert note.startswith('Graph "shop": nodes whose target is computed per instance (spread)')
    assert note.endswith(
        "and ServiceAccount team/builder must be allowed to get that cluster's Secret in "
        "kro-system (M-13)"
    )
