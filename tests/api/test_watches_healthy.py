"""WatchesHealthy (V-14) from the kinds an object watches: the values upstream documents."""

from __future__ import annotations

from kro.api.conditions import watches_healthy

REFUSAL = (
    '403 Forbidden: configmaps is forbidden: User "system:serviceaccount:kro:kro" cannot list '
    'resource "configmaps" in API group "" at the cluster scope'
)


def test_every_watched_kind_synced() -> None:
    assert watches_healthy() == {
        "type": "WatchesHealthy",
        "status": "True",
        "reason": "AllWatchesSynced",
        "message": "changes to all watched kinds are detected",
    }


def test_a_kind_still_listing_is_unknown_pending() -> None:
    condition = watches_healthy(pending=["configmaps", "deployments.apps"])
    assert (condition["status"], condition["reason"]) == ("Unknown", "WatchesPending")
    assert "configmaps" in condition["message"]
    assert "deployments.apps" in condition["message"]


def test_a_refused_kind_is_false_blocked_naming_the_plural_and_the_api_error() -> None:
    condition = watches_healthy(blocked=[("configmaps", REFUSAL)])
    assert (condition["status"], condition["reason"]) == ("False", "WatchBlocked")
    assert "configmaps" in condition["message"]
    assert "Forbidden" in condition["message"]
    assert REFUSAL in condition["message"]


def test_a_refusal_outranks_a_pending_list_and_every_refusal_is_named() -> None:
    condition = watches_healthy(
        blocked=[("configmaps", REFUSAL), ("secrets", "403 Forbidden: secrets is forbidden")],
        pending=["services"],
    )
    assert (condition["status"], condition["reason"]) == ("False", "WatchBlocked")
    assert "configmaps" in condition["message"]
    assert "secrets is forbidden" in condition["message"]
    assert "services" not in condition["message"]
