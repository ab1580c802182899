"""The pre-flight (kro.controllers.permissions): one SelfSubjectAccessReview per permission,
answers cached per rule set, the `PermissionsGranted` condition and its text, and how the RGD's
Ready takes it into account."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from controllers_fakes import RESOLVER, DictClient, greeter_graph, greeter_rgd

from kro.api.conditions import get_condition
from kro.controllers.permissions import (
    AccessCheck,
    CheckerOptions,
    Permission,
    PermissionChecker,
    PolicyRule,
    missing_rules,
    ready_dependents,
    report_permissions,
    required_rules,
)
from kro.controllers.registry import RevisionRegistry
from kro.controllers.rgd import RGDS, RGDReconciler
from kro.runtime.errors import Forbidden
from kro.runtime.gvk import GVR

SSAR = GVR("authorization.k8s.io", "v1", "selfsubjectaccessreviews")
DEPLOYMENTS = PolicyRule(("apps",), ("deployments",), ("get", "patch"))
STATUS = PolicyRule(("example.com",), ("widgets/status",), ("patch",))


class Authorizer:
    """Answers SelfSubjectAccessReviews from a set of allowed (group, resource, verb)."""

    def __init__(self, allowed: set[tuple[str, str, str]] | None = None) -> None:
        self.allowed = allowed or set()
        self.reviews: list[dict[str, Any]] = []
        self.fail: Exception | None = None

    async def create(self, gvr: GVR, obj: Mapping[str, Any], **kwargs: Any) -> dict[str, Any]:
        assert gvr == SSAR
        assert not kwargs.get("namespace")
        if self.fail is not None:
            raise self.fail
        self.reviews.append(copy.deepcopy(dict(obj)))
        attributes = obj["spec"]["resourceAttributes"]
        resource = attributes["resource"] + (
            f"/{attributes['subresource']}" if attributes["subresource"] else ""
        )
        allowed = (attributes["group"], resource, attributes["verb"]) in self.allowed
        return {**obj, "status": {"allowed": allowed}}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def checker(authorizer: Authorizer, clock: Clock | None = None) -> PermissionChecker:
    return PermissionChecker(authorizer, clock=clock or Clock())  # type: ignore[arg-type]


# --- the reviews --------------------------------------------------------------------------------


async def test_one_cluster_wide_review_per_permission_with_the_subresource_split() -> None:
    authorizer = Authorizer({("apps", "deployments", "get")})
    missing = await missing_rules(authorizer, [DEPLOYMENTS, STATUS])  # type: ignore[arg-type]
    assert missing == [
        PolicyRule(("apps",), ("deployments",), ("patch",)),
        PolicyRule(("example.com",), ("widgets/status",), ("patch",)),
    ]
    attributes = sorted(
        (r["spec"]["resourceAttributes"] for r in authorizer.reviews), key=lambda a: a["verb"]
    )
    assert attributes == [
        {"group": "apps", "resource": "deployments", "subresource": "", "verb": "get"},
        {"group": "apps", "resource": "deployments", "subresource": "", "verb": "patch"},
        {"group": "example.com", "resource": "widgets", "subresource": "status", "verb": "patch"},
    ]
    assert all("namespace" not in a for a in attributes)  # every namespace at once
    assert {r["kind"] for r in authorizer.reviews} == {"SelfSubjectAccessReview"}


async def test_answers_are_cached_per_rule_set() -> None:
    authorizer, clock = Authorizer(), Clock()
    checks = checker(authorizer, clock)
    first = await checks.check([DEPLOYMENTS])
    assert first.missing == {
        Permission("apps", "deployments", "get"),
        Permission("apps", "deployments", "patch"),
    }
    await checks.check([DEPLOYMENTS])
    assert len(authorizer.reviews) == 2  # the second check was answered from the cache
    await checks.check([DEPLOYMENTS, STATUS])  # another rule set: asked
    assert len(authorizer.reviews) == 5


async def test_missing_answers_expire_so_a_role_granted_later_shows() -> None:
    authorizer, clock = Authorizer(), Clock()
    checks = checker(authorizer, clock)
    assert (await checks.check([STATUS])).missing
    authorizer.allowed.add(("example.com", "widgets/status", "patch"))
    clock.now += CheckerOptions().recheck_missing_s - 1
    assert (await checks.check([STATUS])).missing  # still cached
    clock.now += 1
    assert (await checks.check([STATUS])).complete


async def test_complete_answers_are_kept_longer() -> None:
    authorizer, clock = Authorizer({("example.com", "widgets/status", "patch")}), Clock()
    checks = checker(authorizer, clock)
    assert (await checks.check([STATUS])).complete
    authorizer.allowed.clear()
    clock.now += CheckerOptions().granted_ttl_s - 1
    assert (await checks.check([STATUS])).complete
    clock.now += 1
    assert not (await checks.check([STATUS])).complete


async def test_a_failed_review_is_an_unknown_answer_not_a_missing_permission() -> None:
    authorizer = Authorizer()
    authorizer.fail = Forbidden(
        status=403, reason="Forbidden", message="cannot create selfsubjectaccessreviews"
    )
    check = await checker(authorizer).check([DEPLOYMENTS])
    assert check == AccessCheck(error="403 Forbidden: cannot create selfsubjectaccessreviews")
    assert not check.complete


# --- the condition ------------------------------------------------------------------------------


async def _report(
    authorizer: Authorizer, status: dict[str, Any] | None = None
) -> tuple[list[tuple[str, str, str, str]], float | None]:
    seen: list[tuple[str, str, str, str]] = []

    def cond(kind: str, value: str, reason: str, message: str) -> None:
        seen.append((kind, value, reason, message))

    after = await report_permissions(
        checker(authorizer), greeter_graph(), {} if status is None else status, cond
    )
    return seen, after


def _all_of_greeter() -> set[tuple[str, str, str]]:
    return {
        (p.group, p.resource, p.verb)
        for rule in required_rules(greeter_graph())
        for p in rule.permissions()
    }


async def test_no_condition_when_everything_is_granted_and_an_old_one_goes() -> None:
    status = _status("False")
    seen, after = await _report(Authorizer(_all_of_greeter()), status)
    assert seen == []
    assert [c["type"] for c in status["conditions"]] == [
        "GraphRevisionsResolved",
        "GraphAccepted",
        "KindReady",
        "ControllerReady",
    ]
    assert after is None  # nothing to look at again


async def test_condition_false_names_each_missing_resource_and_verb() -> None:
    granted = _all_of_greeter() - {
        ("", "configmaps", "create"),
        ("", "configmaps", "delete"),
        ("unit.kro.run", "greeters/status", "patch"),
    }
    seen, after = await _report(Authorizer(granted))
    assert seen == [
        (
            "PermissionsGranted",
            "False",
            "MissingPermissions",
            "missing permissions: configmaps: create, delete; unit.kro.run/greeters/status: patch",
        )
    ]
    assert after == CheckerOptions().recheck_missing_s


async def test_condition_unknown_when_kro_cannot_ask() -> None:
    authorizer = Authorizer()
    authorizer.fail = Forbidden(status=403, reason="Forbidden", message="no")
    seen, after = await _report(authorizer)
    assert seen == [
        (
            "PermissionsGranted",
            "Unknown",
            "PermissionCheckFailed",
            "cannot check kro's permissions: 403 Forbidden: no",
        )
    ]
    assert after == CheckerOptions().recheck_failed_s


# --- Ready --------------------------------------------------------------------------------------


def _status(permissions: str | None) -> dict[str, Any]:
    conditions = [
        {
            "type": t,
            "status": "True",
            "reason": "x",
            "message": "",
            "observedGeneration": 1,
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
        for t in ("GraphRevisionsResolved", "GraphAccepted", "KindReady", "ControllerReady")
    ]
    if permissions is not None:
        conditions.append(
            {
                "type": "PermissionsGranted",
                "status": permissions,
                "reason": "MissingPermissions",
                "message": "missing permissions: configmaps: create",
                "observedGeneration": 1,
                "lastTransitionTime": "2026-01-01T00:00:01Z",
            }
        )
    return {"conditions": conditions}


def test_ready_counts_the_permission_condition_only_while_it_is_false() -> None:
    upstream = ("GraphRevisionsResolved", "GraphAccepted", "KindReady", "ControllerReady")
    assert ready_dependents(_status(None)) == upstream
    assert ready_dependents(_status("True")) == upstream
    assert ready_dependents(_status("Unknown")) == upstream
    assert ready_dependents(_status("False")) == (*upstream, "PermissionsGranted")


async def _written_status(permissions: str | None) -> dict[str, Any]:
    client = DictClient()
    rgd = client.seed(RGDS, greeter_rgd())
    reconciler = RGDReconciler(
        client=client,  # type: ignore[arg-type]
        registry=RevisionRegistry(),
        resolver=RESOLVER,
        dynamic=None,  # type: ignore[arg-type]
        applier=None,  # type: ignore[arg-type]
    )
    status = _status(permissions)
    await reconciler._write_status(rgd, status)
    return dict(client.objects[(RGDS, "greeter")]["status"])


async def test_missing_permissions_make_the_rgd_not_ready_but_still_active() -> None:
    status = await _written_status("False")
    ready = get_condition(status, "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "MissingPermissions",
        "missing permissions: configmaps: create",
    )
    assert status["state"] == "Active"


async def test_an_inconclusive_check_does_not_hold_ready_back() -> None:
    for permissions in ("Unknown", "True", None):
        ready = get_condition(await _written_status(permissions), "Ready")
        assert ready is not None
        assert ready["status"] == "True", permissions
