"""`spec.resources[].deletionPolicy` at build time (V-30..V-32): the gate, where the field is
refused, and `Orphaned` templates with nowhere to put the annotation. Messages are the ones the
v0.10 behaviour names (`DeletionPolicy feature gate`, `deletionPolicy is only supported on
template resources`, `metadata is not a map`, `single ${...} expression`,
`metadata.annotations is not a map`), each naming the resource."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from test_builder_fixtures import build, build_error, configmap, rgd

from kro.api.v1alpha1 import Resource
from kro.graph.build_errors import RGDValidationError

EXTERNAL = {
    "id": "shared",
    "externalRef": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}},
}


def _with_metadata(metadata: Any, policy: str = "Orphaned") -> dict[str, Any]:
    resource = configmap("ledger", deletionPolicy=policy)
    resource["template"]["metadata"] = metadata
    return resource


@pytest.mark.parametrize("policy", ["Delete", "Orphaned"])
def test_gate_off_refuses_the_field_whatever_its_value(policy: str) -> None:
    err = build_error(rgd(configmap("ledger", deletionPolicy=policy)))
    assert isinstance(err, RGDValidationError)
    assert "DeletionPolicy feature gate" in str(err)
    assert 'resource "ledger"' in str(err)
    assert err.resource_id == "ledger"


def test_gate_off_leaves_rgds_without_the_field_alone() -> None:
    graph = build(rgd(configmap("ledger")))
    assert graph.node("ledger").deletion_policy is None


def test_gate_on_every_template_gets_a_policy_delete_by_default() -> None:
    graph = build(
        rgd(
            configmap("ledger", deletionPolicy="Orphaned"),
            configmap("scratch", name="${schema.spec.name}-s", deletionPolicy="Delete"),
            configmap("plain", name="${schema.spec.name}-p"),
            EXTERNAL,
        ),
        deletion_policy=True,
    )
    policies = {n.id: n.deletion_policy for n in graph.nodes.values()}
    assert policies == {
        "ledger": "Orphaned",
        "scratch": "Delete",
        "plain": "Delete",
        "shared": None,  # kro never deletes what it only reads
    }


@pytest.mark.parametrize("gate", [True, False])
def test_external_refs_cannot_declare_a_policy(gate: bool) -> None:
    obj = rgd(configmap("ledger"), {**EXTERNAL, "deletionPolicy": "Orphaned"})
    err = build_error(obj, deletion_policy=gate)
    assert "deletionPolicy is only supported on template resources" in str(err)
    assert 'resource "shared"' in str(err)


@pytest.mark.parametrize("value", ["Detach", "Orphan", "orphaned", "Retain"])
def test_only_delete_and_orphaned_are_policies(value: str) -> None:
    err = build_error(rgd(configmap("ledger", deletionPolicy=value)), deletion_policy=True)
    assert f'unsupported deletionPolicy "{value}"' in str(err)
    with pytest.raises(ValidationError):
        Resource.model_validate(configmap("ledger", deletionPolicy=value))


def test_admission_model_refuses_a_policy_on_an_external_ref() -> None:
    with pytest.raises(ValidationError) as caught:
        Resource.model_validate({**EXTERNAL, "deletionPolicy": "Delete"})
    assert "deletionPolicy is only supported on template resources" in str(caught.value)
    assert Resource.model_validate(configmap("x", deletionPolicy="Orphaned")).deletion_policy == (
        "Orphaned"
    )


@pytest.mark.parametrize(
    ("metadata", "problem"),
    [
        ("${schema.spec.config}", "metadata is not a map"),
        (
            {"name": "x", "annotations": "note: ${schema.spec.name}"},
            "single ${...} expression",
        ),
        ({"name": "x", "annotations": ["a", "b"]}, "metadata.annotations is not a map"),
    ],
    ids=["metadata-expression", "annotations-text", "annotations-list"],
)
def test_orphaned_needs_somewhere_to_put_its_annotation(metadata: Any, problem: str) -> None:
    err = build_error(rgd(_with_metadata(metadata)), deletion_policy=True)
    assert problem in str(err)
    assert 'resource "ledger"' in str(err)
    assert err.resource_id == "ledger"


def test_delete_has_nothing_to_put_anywhere() -> None:
    """Only `Orphaned` writes the annotation; `Delete` with an odd metadata is left to the
    other checks (here: annotations as text is a type error of the ConfigMap schema, not a
    deletionPolicy error)."""
    err = build_error(
        rgd(_with_metadata({"name": "x", "annotations": "note"}, "Delete")), deletion_policy=True
    )
    assert "deletionPolicy" not in str(err)


@pytest.mark.parametrize(
    "annotations",
    [None, {"example.com/note": "x"}, "${schema.spec.labels}"],
    ids=["absent", "map", "one-expression"],
)
def test_orphaned_builds_where_the_annotation_fits(annotations: Any) -> None:
    metadata: dict[str, Any] = {"name": "${schema.spec.name}"}
    if annotations is not None:
        metadata["annotations"] = annotations
    graph = build(rgd(_with_metadata(metadata)), deletion_policy=True)
    assert graph.node("ledger").deletion_policy == "Orphaned"


def test_a_template_may_not_write_the_policy_annotation_itself() -> None:
    """G-09: the key is under the reserved `internal.kro.run/` prefix."""
    metadata = {"name": "x", "annotations": {"internal.kro.run/deletion-policy": "Orphaned"}}
    err = build_error(rgd(_with_metadata(metadata)), deletion_policy=True)
    assert 'annotations with prefix "internal.kro.run/" are reserved for internal use' in str(err)
