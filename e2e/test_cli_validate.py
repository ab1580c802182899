"""`kro validate --kubeconfig`: kinds installed in a cluster (CRDs) resolve from its OpenAPI;
without it the error names the kind and says how to supply it; the command prints only its
verdict (no log lines from the client underneath), and strict checks apply to cluster kinds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kro.cli.main import main
from kro.testing.adminapi import AdminApi
from kro.testing.pytest_plugin import ClusterHandle
from kro.testing.wait import wait_for

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _crd(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "plural": "gadgets",
                "singular": "gadget",
                "kind": "Gadget",
                "listKind": "GadgetList",
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"size": {"type": "integer"}},
                                }
                            },
                        }
                    },
                }
            ],
        },
    }


def _rgd(group: str, size_expression: str) -> dict[str, Any]:
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "metadata": {"name": "gadget-users"},
        "spec": {
            "schema": {
                "apiVersion": "v1alpha1",
                "kind": "GadgetUser",
                "spec": {"size": "integer", "label": "string"},
            },
            "resources": [
                {
                    "id": "gadget",
                    "template": {
                        "apiVersion": f"{group}/v1",
                        "kind": "Gadget",
                        "metadata": {"name": "${schema.metadata.name}"},
                        "spec": {"size": size_expression},
                    },
                }
            ],
        },
    }


@pytest.fixture
def gadget_group(kube_admin: AdminApi, kube_namespace: str) -> Any:
    group = f"{kube_namespace}.cli.kro.run"
    kube_admin.create(CRDS, _crd(group))
    wait_for(
        lambda: kube_admin.get(f"/openapi/v3/apis/{group}/v1"),
        timeout_s=60,
        what="the CRD's OpenAPI to be published",
    )
    yield group
    kube_admin.delete(f"{CRDS}/gadgets.{group}")


def test_a_cluster_crd_resolves_only_with_kubeconfig(
    kube_cluster: ClusterHandle,
    gadget_group: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rgd = tmp_path / "rgd.yaml"
    rgd.write_text(yaml.safe_dump(_rgd(gadget_group, "${schema.spec.size}")))
    assert main(["validate", "-f", str(rgd)]) == 1
    error = capsys.readouterr().err
    assert f"schema not found for kind Gadget (apiVersion {gadget_group}/v1)" in error
    assert "--crd FILE" in error
    assert "--kubeconfig FILE" in error
    assert main(["validate", "-f", str(rgd), "--kubeconfig", str(kube_cluster.kubeconfig)]) == 0
    out, err = capsys.readouterr()
    assert out == "Validation successful! The ResourceGraphDefinition is valid.\n"
    assert err == ""


def test_the_cluster_schema_type_checks_templates(
    kube_cluster: ClusterHandle,
    gadget_group: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rgd = tmp_path / "rgd.yaml"
    rgd.write_text(yaml.safe_dump(_rgd(gadget_group, "${schema.spec.label}")))
    assert main(["validate", "-f", str(rgd), "--kubeconfig", str(kube_cluster.kubeconfig)]) == 1
    error = capsys.readouterr().err
    assert "spec.size" in error
    assert "string" in error


def test_unknown_fields_of_a_cluster_kind_are_refused(
    kube_cluster: ClusterHandle,
    gadget_group: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    document = _rgd(gadget_group, "${schema.spec.size}")
    document["spec"]["resources"][0]["template"]["spec"]["colour"] = "red"
    rgd = tmp_path / "rgd.yaml"
    rgd.write_text(yaml.safe_dump(document))
    assert main(["validate", "-f", str(rgd), "--kubeconfig", str(kube_cluster.kubeconfig)]) == 1
    assert capsys.readouterr().err == (
        f'validation failed: resource "gadget" ({gadget_group}/v1 Gadget): '
        'unknown field "spec.colour"\n'
    )
