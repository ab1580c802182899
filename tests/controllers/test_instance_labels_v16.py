"""Children's identity labels fit in 63 characters (V-16): a longer instance name, group or node
id is hashed (`h-` and the first 40 hex digits of its SHA-256), the full name and group kept in
annotations; short values are left as they are and get no annotation."""

from __future__ import annotations

import hashlib

from kro.controllers.instance.binding import InstanceBinding
from kro.dynamic import ObjectRef
from kro.graph.model import Instance
from kro.runtime.gvk import GVR

SHORT = Instance("apps.example.com", "v1", "App", "apps", True, {}, {}, {})
LONG_GROUP = "a" * 40 + ".very-long-group.example.com"


def _hashed(value: str) -> str:
    return "h-" + hashlib.sha256(value.encode()).hexdigest()[:40]


def _binding(api: Instance) -> InstanceBinding:
    gvr = GVR(api.group, api.version, api.plural)
    return InstanceBinding(gvr, ObjectRef(gvr, "team", "web"), api)


def _instance(name: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "team", "uid": "u-1"}}


def test_short_values_are_kept() -> None:
    labels = _binding(SHORT).child_labels(_instance("web"), "deployment")
    assert labels["kro.run/instance-name"] == "web"
    assert labels["kro.run/instance-group"] == "apps.example.com"
    assert labels["kro.run/node-id"] == "deployment"
    assert _binding(SHORT).child_annotations(_instance("web"), "deployment") == {}


def test_long_values_are_hashed_and_kept_whole_in_annotations() -> None:
    name = "n" * 64
    api = Instance(LONG_GROUP, "v1", "App", "apps", True, {}, {}, {})
    node = "x" * 70
    labels = _binding(api).child_labels(_instance(name), node)
    assert labels["kro.run/instance-name"] == _hashed(name)
    assert labels["kro.run/instance-group"] == _hashed(LONG_GROUP)
    assert labels["kro.run/node-id"] == _hashed(node)
    assert all(len(v) <= 63 for v in labels.values())
    assert labels["kro.run/instance-id"] == "u-1"  # a UID is never hashed
    assert _binding(api).child_annotations(_instance(name), node) == {
        "internal.kro.run/instance-name": name,
        "internal.kro.run/instance-group": LONG_GROUP,
    }
    assert (
        _binding(api).collection_selector(_instance(name), node)
        == f"kro.run/instance-id=u-1,kro.run/node-id={_hashed(node)}"
    )
