"""kro.api.names: the wire names are well-formed and defined once."""

from __future__ import annotations

import re

from kro.api import names

QUALIFIED_NAME = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
CAMEL_CASE = re.compile(r"^[A-Z][A-Za-z]*$")


def constants(prefix: str) -> dict[str, str]:
    return {
        name: value
        for name, value in vars(names).items()
        if name.startswith(prefix) and isinstance(value, str)
    }


def test_label_and_annotation_keys_are_qualified_names() -> None:
    keys = {**constants("LABEL_"), **constants("ANNOTATION_")}
    assert len(keys) >= 27
    for name, key in keys.items():
        prefix, _, local = key.rpartition("/")
        assert QUALIFIED_NAME.match(key), name
        assert len(local) <= 63, name
        assert len(prefix) <= 253, name


def test_no_two_labels_or_annotations_share_a_key() -> None:
    labels = list(constants("LABEL_").values())
    annotations = list(constants("ANNOTATION_").values())
    assert len(labels) == len(set(labels))
    assert len(annotations) == len(set(annotations))


def test_exact_upstream_spellings_of_contractual_names() -> None:
    assert names.FIELD_MANAGER_APPLYSET == "kro.run/applyset"
    assert names.FIELD_MANAGER_APPLYSET_PARENT == "kro.run/applyset-parent"
    assert names.FIELD_MANAGER_LABELLER == "kro.run/labeller"
    assert names.FINALIZER == "kro.run/finalizer"
    assert names.LABEL_RGD_NAME == "kro.run/resource-graph-definition-name"  # not internal.* (§6)
    assert names.ANNOTATION_APPLY_ORDER == "internal.kro.run/apply-order"
    assert names.LEADER_ELECTION_LEASE == "controller.kro.run"


def test_condition_types_and_reasons_are_camel_case() -> None:
    for group in ("CONDITION_", "REASON_"):
        for name, value in constants(group).items():
            assert CAMEL_CASE.match(value), name


def test_condition_groups_reference_known_types() -> None:
    types = set(constants("CONDITION_").values())
    for group in (
        names.RGD_DEPENDENT_CONDITIONS,
        names.RGD_ACTIVE_CONDITIONS,
        names.GRAPH_REVISION_DEPENDENT_CONDITIONS,
        names.INSTANCE_DEPENDENT_CONDITIONS,
        names.INSTANCE_STATUS_CONDITIONS,
        names.INSTANCE_BUILTIN_CONDITIONS,
    ):
        assert set(group) <= types
    assert names.CONDITION_GRAPH_REVISIONS_RESOLVED not in names.RGD_ACTIVE_CONDITIONS
    assert names.CONDITION_READY not in names.INSTANCE_DEPENDENT_CONDITIONS


def test_watches_healthy_is_built_in_but_not_a_dependent_of_ready() -> None:
    """V-14: five built-ins in upstream's order; Ready does not wait for watches."""
    assert names.INSTANCE_BUILTIN_CONDITIONS == (
        "Ready",
        "InstanceManaged",
        "GraphResolved",
        "ResourcesReady",
        "WatchesHealthy",
    )
    assert names.CONDITION_WATCHES_HEALTHY not in names.INSTANCE_DEPENDENT_CONDITIONS
    assert (names.REASON_ALL_WATCHES_SYNCED, names.REASON_WATCHES_PENDING) == (
        "AllWatchesSynced",
        "WatchesPending",
    )
    assert names.REASON_WATCH_BLOCKED == "WatchBlocked"


def test_states_match_upstream() -> None:
    assert set(constants("INSTANCE_STATE_").values()) == {
        "ACTIVE",
        "IN_PROGRESS",
        "FAILED",
        "DELETING",
        "ERROR",
    }
    assert set(constants("RGD_STATE_").values()) == {"Active", "Inactive"}


def test_feature_gates_are_all_known_and_off_by_default() -> None:
    assert set(names.FEATURE_GATE_DEFAULTS) == set(constants("FEATURE_").values()) - {""}
    assert not any(names.FEATURE_GATE_DEFAULTS.values())
