"""ApplySet ID, inventory hash and GroupKind formatting: wire formats, checked against vectors
computed here from the formulas in the reference (§1.Q, N-15)."""

from __future__ import annotations

import base64
import hashlib

import pytest

from kro.applyset import GroupKind, Inventory, Parent, applyset_id, inventory_hash
from kro.applyset.inventory import format_group_kinds, format_namespaces
from kro.runtime.gvk import GVK, GVR


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")


def test_applyset_id_hashes_name_namespace_kind_group() -> None:
    expected = "applyset-" + _b64(b"my-app.team-a.WebApp.example.kro.run") + "-v1"
    got = applyset_id(name="my-app", namespace="team-a", kind="WebApp", group="example.kro.run")
    assert got == expected
    assert "=" not in got
    assert "+" not in got
    assert "/" not in got


def test_applyset_id_of_a_cluster_scoped_parent_has_an_empty_namespace_segment() -> None:
    expected = "applyset-" + _b64(b"cluster-app..ClusterApp.kro.run") + "-v1"
    assert applyset_id(name="cluster-app", namespace="", kind="ClusterApp", group="kro.run") == (
        expected
    )


def test_applyset_id_and_hash_literal_vectors() -> None:
    # sha256("a.b.C.d") = bc54a90e...3bd003 (coreutils sha256sum), base64url without padding.
    assert applyset_id(name="a", namespace="b", kind="C", group="d") == (
        "applyset-vFSpDq27-OKEKe8-P1ECqAsxvnQtcW41Q0QdyAA70AM-v1"
    )
    gks = [GroupKind("apps", "Deployment"), GroupKind("", "ConfigMap")]
    assert inventory_hash("applyset-x-v1", gks, ["other"]) == (
        "sha256:tCJ8XP0PIPJZxJZymc89_EjQX332tIG6t5k8412Vlow"
    )


def test_parent_id_ignores_the_version() -> None:
    v1 = Parent(GVR("kro.run", "v1", "apps"), GVK("kro.run", "v1", "App"), "x", "ns")
    v2 = Parent(GVR("kro.run", "v2", "apps"), GVK("kro.run", "v2", "App"), "x", "ns")
    assert v1.id == v2.id == applyset_id(name="x", namespace="ns", kind="App", group="kro.run")


def test_parent_from_object_reads_kind_name_namespace() -> None:
    obj = {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "App",
        "metadata": {"name": "a", "namespace": "n"},
    }
    parent = Parent.from_object(obj, GVR("kro.run", "v1alpha1", "apps"))
    assert (parent.gvk, parent.name, parent.namespace) == (
        GVK("kro.run", "v1alpha1", "App"),
        "a",
        "n",
    )
    assert Inventory(parent.id).namespaces(parent) == ["n"]


def test_cluster_scoped_parent_lists_namespaced_members_in_default_first() -> None:
    parent = Parent(GVR("kro.run", "v1", "apps"), GVK("kro.run", "v1", "App"), "a", "")
    assert Inventory(parent.id).namespaces(parent) == ["default"]


def test_inventory_hash_covers_id_sorted_kinds_and_sorted_namespaces() -> None:
    payload = b"applyset-x-v1\x00ConfigMap,Deployment.apps,Service\x00a,b"
    expected = "sha256:" + _b64(payload)
    got = inventory_hash(
        "applyset-x-v1",
        [GroupKind("", "Service"), GroupKind("apps", "Deployment"), GroupKind("", "ConfigMap")],
        ["b", "a", "b"],
    )
    assert got == expected


def test_inventory_hash_of_an_empty_inventory() -> None:
    assert inventory_hash("applyset-x-v1", [], []) == "sha256:" + _b64(b"applyset-x-v1\x00\x00")


@pytest.mark.parametrize(
    ("gk", "text"),
    [
        (GroupKind("", "ConfigMap"), "ConfigMap"),
        (GroupKind("apps", "Deployment"), "Deployment.apps"),
        (GroupKind("networking.k8s.io", "Ingress"), "Ingress.networking.k8s.io"),
    ],
    ids=["core", "apps", "dotted-group"],
)
def test_group_kind_round_trips(gk: GroupKind, text: str) -> None:
    assert str(gk) == text
    assert GroupKind.parse(text) == gk


@pytest.mark.parametrize("text", ["", ".apps", " ConfigMap", "Config Map"], ids=repr)
def test_group_kind_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError, match="invalid group kind"):
        GroupKind.parse(text)


def test_formats_are_sorted_and_deduplicated() -> None:
    gks = [GroupKind("apps", "Deployment"), GroupKind("", "ConfigMap"), GroupKind("", "ConfigMap")]
    assert format_group_kinds(gks) == "ConfigMap,Deployment.apps"
    assert format_namespaces(["z", "a", "z"]) == "a,z"
    assert format_group_kinds([]) == "" == format_namespaces([])
