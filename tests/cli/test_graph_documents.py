"""The offline commands on `Graph` documents (kro.run/v1alpha1): validate, graph, render and
generate rbac. Expected values come from the Graph API's contract (the `Accepted` messages, the
node kinds and what they need) and from the documents in tests/cli/data/graphs/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kro.cli.main import main
from tests.cli.test_offline import WIDGET_CRD

DATA = Path(__file__).resolve().parent / "data" / "graphs"
BUNDLE = str(DATA / "bundle.yaml")
FANIN = str(DATA / "fanin.yaml")
DECORATOR = str(DATA / "decorator.yaml")
SERVICES = str(DATA / "services.yaml")
READ = ["get", "list", "watch"]
WRITE = [*READ, "create", "update", "patch", "delete"]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, nodes: list[dict[str, Any]], **spec: Any) -> str:
    body = {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "Graph",
        "metadata": {"name": "g"},
        "spec": {"nodes": nodes, **spec},
    }
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return str(path)


def template(node_id: str, api_version: str, kind: str, name: str, **body: Any) -> dict[str, Any]:
    """A `template` node creating one object."""
    metadata = {"name": name}
    return {
        "id": node_id,
        "template": {"apiVersion": api_version, "kind": kind, "metadata": metadata, **body},
    }


def configmap(node_id: str, name: str, **data: str) -> dict[str, Any]:
    return template(node_id, "v1", "ConfigMap", name, data=data)


# --- validate ----------------------------------------------------------------------------------


def test_a_valid_graph_says_how_many_nodes_compiled(capsys: pytest.CaptureFixture[str]) -> None:
    # Accepted=True carries "compiled <n> nodes"; the bundle has a def and two templates.
    assert run(["validate", "-f", BUNDLE], capsys) == (
        0,
        "Validation successful! The Graph is valid: compiled 3 nodes.\n",
        "",
    )


@pytest.mark.parametrize(
    ("nodes", "fragment"),
    [
        # A def's literal fields are typed from their values: a misspelt field does not compile.
        (
            [
                {"id": "naming", "def": {"prefix": "shop"}},
                configmap("cm", "${naming.prefxi}"),
            ],
            "prefxi",
        ),
        ([configmap("status", "x")], 'id "status" is reserved'),
        (
            [
                {
                    "id": "svc",
                    "forEach": [{"s": "${[1]}"}],
                    "ref": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}},
                }
            ],
            "forEach is not supported on ref nodes",
        ),
    ],
    ids=["def-typo", "reserved-id", "foreach-on-ref"],
)
def test_a_graph_that_does_not_compile_fails_with_the_accepted_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], nodes: list[dict[str, Any]], fragment: str
) -> None:
    code, out, err = run(["validate", "-f", write(tmp_path, nodes)], capsys)
    assert (code, out) == (1, "")
    assert err.startswith("validation failed: ")
    assert fragment in err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("nodes", "spec", "expected"),
    [
        # The CRD's list-map key, minItems and node rule (V-41), in the API server's words.
        (
            [configmap("a", "x"), configmap("a", "y")],
            {},
            'Graph "g" is invalid: spec.nodes[1]: Duplicate value: {"id": "a"}',
        ),
        (
            [],
            {},
            'Graph "g" is invalid: spec.nodes: Invalid value: 0: spec.nodes in body '
            "should have at least 1 items",
        ),
        (
            [{"id": "cm", "template": {"apiVersion": "v1", "kind": "ConfigMap"}, "def": {}}],
            {},
            'Graph "g" is invalid: spec.nodes[0]: Invalid value: "object": exactly one of '
            "template, ref, def, graph, patch must be set",
        ),
        (
            [configmap("cm", "x")],
            {"serviceAccountName": "Builder_SA"},
            'Graph "g" is invalid: spec.serviceAccountName: Invalid value: "Builder_SA": '
            "spec.serviceAccountName in body should match "
            "'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'",
        ),
        (
            [{**configmap("cm", "x"), "readyWen": ["${true}"]}],
            {},
            'unknown field "spec.nodes[0].readyWen"',
        ),
    ],
    ids=["duplicate-id", "no-nodes", "two-node-kinds", "service-account-name", "unknown-field"],
)
def test_a_graph_the_api_server_would_refuse_is_refused_in_its_words(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    nodes: list[dict[str, Any]],
    spec: dict[str, Any],
    expected: str,
) -> None:
    code, out, err = run(["validate", "-f", write(tmp_path, nodes, **spec)], capsys)
    assert (code, out, err) == (1, "", f"validation failed: {expected}\n")


def test_json_output_names_each_results_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write(tmp_path, [configmap("self", "x")])
    code, out, _ = run(["validate", "-f", BUNDLE, "-f", bad, "-o", "json"], capsys)
    data = json.loads(out)
    assert code == 1
    assert data["valid"] is False
    assert [(r["kind"], r["name"], r["valid"]) for r in data["results"]] == [
        ("Graph", "bundle", True),
        ("Graph", "g", False),
    ]
    assert data["results"][1]["errors"] == ['id "self" is reserved']


def test_custom_kinds_resolve_from_crd_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    widget = template("widget", "example.com/v1", "Widget", "w", spec={"size": 3})
    graph = write(tmp_path, [widget])
    code, _, err = run(["validate", "-f", graph], capsys)
    assert code == 1
    assert "Widget" in err
    assert "--crd" in err
    crd = tmp_path / "crd.yaml"
    crd.write_text(yaml.safe_dump(WIDGET_CRD), encoding="utf-8")
    assert run(["validate", "-f", graph, "--crd", str(crd)], capsys)[0] == 0


def test_a_graph_may_create_instances_of_an_rgd_given_with_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rgd = Path(__file__).resolve().parent / "data" / "small-rgd.yaml"  # kind Greeting
    greeting = template("hello", "kro.run/v1alpha1", "Greeting", "hi", spec={"name": "world"})
    graph = write(tmp_path, [greeting])
    code, out, _ = run(["validate", "-f", str(rgd), "-f", graph], capsys)
    assert code == 0
    assert out.splitlines() == [
        f"{rgd}: greetings: Validation successful! The ResourceGraphDefinition is valid.",
        f"{graph}: g: Validation successful! The Graph is valid: compiled 1 nodes.",
    ]


def test_generate_crd_ignores_graphs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["generate", "crd", "-f", BUNDLE], capsys)
    assert (code, out) == (1, "")
    assert "no ResourceGraphDefinition found" in err


# --- graph -------------------------------------------------------------------------------------


def test_graph_prints_the_dependency_order(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["graph", "-f", BUNDLE], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "Graph: bundle"
    # settings reads naming; app reads naming and settings.
    assert lines[1] == "Topological order: naming, settings, app"
    assert "  naming: Value, value" in lines
    assert "  settings: Resource, v1/ConfigMap" in lines
    assert lines[-3:] == ["  naming -> settings", "  naming -> app", "  settings -> app"]
    assert not any(line.startswith("Instance:") for line in lines)


def test_graph_data_and_diagrams(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["graph", "-f", FANIN, "-o", "json"], capsys)
    (data,) = json.loads(out)["graphs"]
    assert code == 0
    assert (data["name"], data["kind"]) == ("edge-routes", "Graph")
    assert "instance" not in data
    assert [(n["id"], n["type"], n["conditional"]) for n in data["nodes"]] == [
        ("services", "ExternalCollection", False),
        ("ingress", "Resource", True),
    ]
    assert data["edges"] == [{"from": "services", "to": "ingress"}]
    for fmt, first in (("mermaid", "flowchart TD"), ("dot", 'digraph "bundle" {')):
        code, out, _ = run(["graph", "-f", BUNDLE, "-o", fmt], capsys)
        assert (code, out.splitlines()[0]) == (0, first)
        assert "naming" in out


# --- render ------------------------------------------------------------------------------------


def test_render_prints_what_the_graph_would_apply(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["render", "-f", BUNDLE], capsys)
    assert (code, err) == (0, "")
    header, *_ = out.splitlines()
    assert header == "# Graph team-a/bundle: apply order naming, settings, app"
    objects = [d for d in yaml.safe_load_all(out) if d]
    assert [(o["kind"], o["metadata"]) for o in objects] == [
        ("ConfigMap", {"name": "shop-settings", "namespace": "team-a"}),
        ("Deployment", {"name": "shop", "namespace": "team-a"}),
    ]
    assert objects[0]["data"] == {"replicas": "2"}
    assert objects[1]["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "CONFIG", "value": "shop-settings"}
    ]
    assert '# naming: value (def, not applied): {"prefix": "shop", "replicas": 2}' in out
    assert "# status" not in out  # a Graph has no status fields


def test_render_json_carries_def_values(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["render", "-f", BUNDLE, "-o", "json"], capsys)
    data = json.loads(out)
    assert code == 0
    assert data["instances"] == []
    (graph,) = data["graphs"]
    assert graph["graph"]["metadata"]["name"] == "bundle"
    nodes = {n["id"]: n for n in graph["resources"]}
    assert nodes["naming"]["state"] == "value"
    assert nodes["naming"]["value"] == {"prefix": "shop", "replicas": 2}
    assert nodes["naming"]["objects"] == []
    assert [o["kind"] for o in nodes["app"]["objects"]] == ["Deployment"]


def test_a_graph_without_a_namespace_renders_into_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["render", "-f", write(tmp_path, [configmap("cm", "x", k="v")])], capsys)
    assert code == 0
    (obj,) = [d for d in yaml.safe_load_all(out) if d]
    assert obj["metadata"] == {"name": "x", "namespace": "default"}


def test_refs_are_empty_offline_and_come_from_observed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # No Service is known offline: the list is empty and includeWhen leaves the Ingress out.
    code, out, _ = run(["render", "-f", FANIN], capsys)
    assert code == 0
    assert [d for d in yaml.safe_load_all(out) if d] == []
    assert "# ingress: skipped" in out
    # Observed Services: only those the ref's namespace and selector would list.
    code, out, _ = run(["render", "-f", FANIN, "--observed", SERVICES], capsys)
    (ingress,) = [d for d in yaml.safe_load_all(out) if d]
    assert code == 0
    assert [r["host"] for r in ingress["spec"]["rules"]] == ["alpha.example.test"]


def test_a_decorator_renders_one_object_per_selected_namespace(
    capsys: pytest.CaptureFixture[str],
) -> None:
    namespaces = str(DATA / "namespaces.yaml")
    code, out, _ = run(["render", "-f", DECORATOR, "--observed", namespaces], capsys)
    assert code == 0
    policies = [d for d in yaml.safe_load_all(out) if d]
    assert [(p["kind"], p["metadata"]["namespace"]) for p in policies] == [
        ("NetworkPolicy", "red"),
        ("NetworkPolicy", "green"),
    ]


def test_render_still_needs_an_instance_for_an_rgd(capsys: pytest.CaptureFixture[str]) -> None:
    rgd = str(Path(__file__).resolve().parent / "data" / "small-rgd.yaml")
    code, out, err = run(["render", "-f", rgd, "-f", BUNDLE], capsys)
    assert code == 0  # the Graph renders; the RGD has no instance to render
    assert out.startswith("# Graph team-a/bundle")
    code, _, err = run(["render", "-f", rgd], capsys)
    assert code == 2
    assert "-i/--instance" in err


def test_render_reports_a_graph_that_does_not_compile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["render", "-f", write(tmp_path, [configmap("kro", "x")])], capsys)
    assert (code, out) == (1, "")
    assert err == 'invalid Graph: id "kro" is reserved\n'


# --- generate rbac -----------------------------------------------------------------------------


def roles(out: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(out) if d}


def test_rbac_for_a_graph_inside_one_namespace_is_a_role(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(["generate", "rbac", "-f", FANIN, "--mode", "aggregation"], capsys)
    assert (code, err) == (0, "")
    found = roles(out)
    role = found[("Role", "kro:graph:edge-routes")]
    assert role["metadata"]["namespace"] == "web"
    # The applier reads Services (ref) and writes the Ingress (template).
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["services"], "verbs": READ},
        {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses"], "verbs": WRITE},
    ]
    binding = found[("RoleBinding", "kro:graph:edge-routes")]
    assert binding["metadata"]["namespace"] == "web"
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "kro:graph:edge-routes",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "edge-routes", "namespace": "web"}
    ]
    # kro's own watches run as kro: list and watch only, picked up by the aggregated role.
    watcher = found[("ClusterRole", "kro:controller:graph:web:edge-routes")]
    assert watcher["metadata"]["labels"] == {"rbac.kro.run/aggregate-to-controller": "true"}
    assert watcher["rules"] == [
        {"apiGroups": [""], "resources": ["services"], "verbs": ["list", "watch"]},
        {
            "apiGroups": ["networking.k8s.io"],
            "resources": ["ingresses"],
            "verbs": ["list", "watch"],
        },
    ]
    assert len(found) == 3


def test_rbac_for_a_graph_reaching_past_its_namespace_is_a_cluster_role(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(["generate", "rbac", "-f", DECORATOR], capsys)
    assert code == 0
    found = roles(out)
    role = found[("ClusterRole", "kro:graph:platform:baseline")]
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": READ},
        {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": WRITE},
    ]
    binding = found[("ClusterRoleBinding", "kro:graph:platform:baseline")]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "baseline-applier", "namespace": "platform"}
    ]
    # --mode standalone: no aggregation label on kro's watch role.
    assert (
        "labels" not in found[("ClusterRole", "kro:controller:graph:platform:baseline")]["metadata"]
    )
    assert err.splitlines() == [
        'Graph "baseline": a ClusterRole is needed: node "targets": Namespace is cluster-scoped',
        'Graph "baseline": a ClusterRole is needed: node "policies": its namespace is computed '
        "(${target.metadata.name})",
    ]


def test_rbac_defaults_the_service_account_and_namespace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = write(tmp_path, [{"id": "v", "def": {"a": 1}}, configmap("cm", "x")])
    code, out, _ = run(["generate", "rbac", "-f", graph, "-n", "team", "-o", "json"], capsys)
    assert code == 0
    documents = json.loads(out)["items"]
    assert [d["kind"] for d in documents] == ["Role", "RoleBinding", "ClusterRole"]
    assert documents[0]["metadata"] == {"name": "kro:graph:g", "namespace": "team"}
    # A def needs nothing; the ConfigMap template needs read and write.
    assert documents[0]["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": WRITE}
    ]
    assert documents[1]["subjects"] == [
        {"kind": "ServiceAccount", "name": "default", "namespace": "team"}
    ]


def test_rbac_warns_about_a_graph_that_creates_rbac(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    role = template("role", "rbac.authorization.k8s.io/v1", "Role", "r", rules=[])
    code, _, err = run(["generate", "rbac", "-f", write(tmp_path, [role])], capsys)
    assert code == 0
    assert "node 'role' creates Role objects" in err
    assert "ServiceAccount default/default" in err


def test_rbac_prints_nothing_for_an_invalid_graph(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["generate", "rbac", "-f", write(tmp_path, [])], capsys)
    assert (code, out) == (1, "")
    assert "spec.nodes in body should have at least 1 items" in err


def test_kubeconfig_looks_up_the_kinds_a_graph_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --kubeconfig, the kinds of a Graph's templates and refs are fetched from the cluster
    (here a stand-in that serves the Widget CRD), as they are for an RGD's resources."""
    from kro.cli import cluster_schemas
    from kro.graph.resolver import OfflineSchemaResolver, referenced_gvks

    asked: list[str] = []

    def with_cluster(
        kubeconfig: str, offline: OfflineSchemaResolver, rgds: list[dict[str, Any]]
    ) -> OfflineSchemaResolver:
        asked.extend(g.kind for rgd in rgds for g in referenced_gvks(rgd.get("spec") or {}))
        offline.add_crd(WIDGET_CRD)
        return offline

    monkeypatch.setattr(cluster_schemas, "with_cluster_schemas", with_cluster)
    ref = {"id": "w", "ref": {"apiVersion": "example.com/v1", "kind": "Widget",
                              "metadata": {"name": "w"}}}  # fmt: skip
    graph = write(tmp_path, [ref, configmap("cm", "${w.metadata.name}")])
    code, out, _ = run(["validate", "-f", graph, "--kubeconfig", str(tmp_path / "k")], capsys)
    assert code == 0
    assert out == "Validation successful! The Graph is valid: compiled 2 nodes.\n"
    assert sorted(asked) == ["ConfigMap", "Widget"]


# --- patch nodes and computed kinds ------------------------------------------------------------

LABEL_PATCH = {
    "id": "owner",
    "patch": {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "shared", "labels": {"team": "blue"}},
    },
}
STATUS_PATCH = {
    "id": "claim",
    "patch": {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "status": {"observedGeneration": 1},
    },
}
COMPUTED_KIND = {
    "id": "anything",
    "def": {"apiVersion": "v1", "kind": "Secret"},
}
COMPUTED = {
    "id": "made",
    "template": {
        "apiVersion": "${anything.apiVersion}",
        "kind": "${anything.kind}",
        "metadata": {"name": "made"},
    },
}


def test_rbac_for_patches_and_computed_kinds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = write(tmp_path, [LABEL_PATCH, STATUS_PATCH, COMPUTED_KIND, COMPUTED])
    code, out, err = run(["generate", "rbac", "-f", graph, "-n", "team"], capsys)
    assert code == 0
    role = roles(out)[("Role", "kro:graph:g")]
    # A patch reads its target and applies to it (the object, or its /status for a status
    # patch); it never creates or deletes. A computed kind gets no rule.
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": [*READ, "update", "patch"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": READ},
        {
            "apiGroups": ["apps"],
            "resources": ["deployments/status"],
            "verbs": ["get", "update", "patch"],
        },
    ]
    assert "node 'made' computes its apiVersion or kind" in err


def test_render_shows_what_a_patch_contributes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = write(tmp_path, [LABEL_PATCH])
    code, out, _ = run(["render", "-f", graph], capsys)
    assert code == 0
    (patch,) = [d for d in yaml.safe_load_all(out) if d]
    assert patch["metadata"] == {
        "name": "shared",
        "namespace": "default",
        "labels": {"team": "blue"},
    }
    assert "# owner (patch of an object kro does not own, apply order 1)" in out
    # The target must exist; offline it is known only from --observed.
    assert "# owner: waiting: patch target ConfigMap default/shared not found" in out
    target = tmp_path / "target.yaml"
    target.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "shared", "namespace": "default"},
            }
        ),
        encoding="utf-8",
    )
    code, out, _ = run(["render", "-f", graph, "--observed", str(target), "-o", "json"], capsys)
    (node,) = json.loads(out)["graphs"][0]["resources"]
    assert (code, node["state"]) == (0, "patch")
    code, out, _ = run(["graph", "-f", graph, "-o", "mermaid"], capsys)
    assert (code, out.splitlines()[1]) == (0, '  owner>"owner<br/>ConfigMap (wave 1)"]')
