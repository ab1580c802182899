"""kro.controllers.permissions: the permissions a resource graph needs, and whether kro holds them.

One source of truth for two users:

* `kro generate rbac` (kro.cli.rbac) prints `required_rules(graph)` as the least-privilege
  ClusterRole for an RGD, computed offline;
* the RGD controller (kro.controllers.rgd) runs a pre-flight when it serves a graph: it asks
  the API server, with one SelfSubjectAccessReview per (group, resource, verb), which of those
  permissions kro's own identity lacks, and reports them in one condition,
  `PermissionsGranted`, before any instance fails on a 403.

The verbs are exactly the requests kro's controllers send (kro.controllers.instance,
kro.applyset, kro.dynamic); keep this list in step with them:

* the instance kind: get, list, watch (informer, GET per reconcile) and patch (labels,
  finalizer and ApplySet inventory by server-side apply; finalizer removal by merge patch);
* `<instances>/status`: patch (status is written by server-side apply through /status, V-04);
* a template resource: get, list, watch (observed by name: GET plus an informer), create and
  patch (server-side apply is a PATCH, and the API server also checks `create` when the PATCH
  creates the object), delete (pruning, instance deletion);
* a forEach collection: the same without get (observed by label selector: LIST + informer);
* an externalRef by name: get, list, watch; by selector: list, watch (read only).

kro writes its finalizer through the main resource, so `<instances>/finalizers` is not needed,
with one exception: a template that sets an ownerReference with `blockOwnerDeletion` to a kind
of this graph needs `update` on that kind's `/finalizers` where the API server runs the
OwnerReferencesPermissionEnforcement admission plugin. A resource that leaves the graph in a
new revision still needs its rule until every instance has pruned it.

Requests are answered by the authorizer for every namespace at once (an access review without a
namespace), because kro's informers watch cluster-wide; a ClusterRole is therefore required.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import structlog

from kro.api.conditions import remove_condition
from kro.api.names import (
    CONDITION_PERMISSIONS_GRANTED,
    LOCAL_CLUSTER_NAME_DEFAULT,
    REASON_MISSING_PERMISSIONS,
    REASON_PERMISSION_CHECK_FAILED,
    RGD_DEPENDENT_CONDITIONS,
    STATUS_FALSE,
    STATUS_UNKNOWN,
)
from kro.graph.model import Graph, Node, NodeType
from kro.graph.targets import node_cluster
from kro.runtime.client import Client
from kro.runtime.errors import KubeError
from kro.runtime.gvk import GVR, split_api_version

log = structlog.get_logger(__name__)

VERB_ORDER: Final = ("get", "list", "watch", "create", "update", "patch", "delete")
"""How verbs are listed (kubectl's habit), so output never depends on set iteration."""

INSTANCE_VERBS: Final = ("get", "list", "watch", "patch")
INSTANCE_STATUS_VERBS: Final = ("patch",)
OWNER_FINALIZER_VERBS: Final = ("update",)
NODE_VERBS: Final[Mapping[NodeType, tuple[str, ...]]] = {
    NodeType.RESOURCE: ("get", "list", "watch", "create", "patch", "delete"),
    NodeType.COLLECTION: ("list", "watch", "create", "patch", "delete"),
    NodeType.EXTERNAL: ("get", "list", "watch"),
    NodeType.EXTERNAL_COLLECTION: ("list", "watch"),
}

SELF_SUBJECT_ACCESS_REVIEWS: Final = GVR("authorization.k8s.io", "v1", "selfsubjectaccessreviews")
MISSING_PREFIX: Final = "missing permissions: "


@dataclass(frozen=True, slots=True, order=True)
class Permission:
    """One thing the authorizer decides: `verb` on `resource` (`plural` or `plural/sub`)."""

    group: str
    resource: str
    verb: str

    def __str__(self) -> str:
        return f"{_resource_name(self.group, self.resource)}: {self.verb}"


@dataclass(frozen=True, slots=True)
class PolicyRule:
    """An RBAC rule: every verb on every resource in every group listed."""

    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]

    def permissions(self) -> Iterator[Permission]:
        for group in self.api_groups:
            for resource in self.resources:
                for verb in self.verbs:
                    yield Permission(group, resource, verb)

    def to_dict(self) -> dict[str, list[str]]:
        """The rule as a ClusterRole carries it."""
        return {
            "apiGroups": list(self.api_groups),
            "resources": list(self.resources),
            "verbs": list(self.verbs),
        }


# --- what a graph needs ------------------------------------------------------------------------


def required_permissions(
    graph: Graph, local_name: str = LOCAL_CLUSTER_NAME_DEFAULT
) -> frozenset[Permission]:
    """Every (group, resource, verb) kro's controllers use for this graph's instances in this
    cluster: a node a literal target sends to a member acts there with the member's Secret's
    credentials (M-13), so it needs nothing here (`kro generate rbac` says the same)."""
    instance = graph.instance
    wanted = {Permission(instance.group, instance.plural, v) for v in INSTANCE_VERBS}
    wanted |= {
        Permission(instance.group, f"{instance.plural}/status", v) for v in INSTANCE_STATUS_VERBS
    }
    for node in graph.nodes.values():
        if node_cluster(node, local_name):
            continue
        wanted |= {Permission(node.gvk.group, node.resource, v) for v in NODE_VERBS[node.type]}
    wanted |= set(_owner_finalizers(graph))
    return frozenset(wanted)


def _owner_finalizers(graph: Graph) -> Iterator[Permission]:
    """`update` on `<owner>/finalizers` for ownerReferences that may block owner deletion.

    Only owners whose kind this graph knows (its instance or one of its resources) can be
    named; a `blockOwnerDeletion` given by an expression is assumed true.
    """
    plurals = {(graph.instance.group, graph.instance.kind): graph.instance.plural}
    plurals |= {(n.gvk.group, n.gvk.kind): n.resource for n in graph.nodes.values()}
    for node in graph.nodes.values():
        for reference in _owner_references(node):
            if reference.get("blockOwnerDeletion") in (False, None):
                continue
            group, _ = split_api_version(str(reference.get("apiVersion") or ""))
            plural = plurals.get((group, str(reference.get("kind") or "")))
            if plural is not None:
                for verb in OWNER_FINALIZER_VERBS:
                    yield Permission(group, f"{plural}/finalizers", verb)


def _owner_references(node: Node) -> list[Mapping[str, Any]]:
    if node.type.is_external:
        return []
    references = (node.template.get("metadata") or {}).get("ownerReferences")
    if not isinstance(references, list):  # absent, or one expression for the whole list
        return []
    return [r for r in references if isinstance(r, Mapping)]


def rules_for(permissions: Iterable[Permission]) -> list[PolicyRule]:
    """Group permissions into rules: one per API group and verb set, resources merged.

    Sorted by (API group, resources), verbs in `VERB_ORDER`: the same permissions always give
    the same rules, whatever order the RGD lists its resources in.
    """
    verbs: dict[tuple[str, str], set[str]] = {}
    for permission in permissions:
        verbs.setdefault((permission.group, permission.resource), set()).add(permission.verb)
    merged: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (group, resource), granted in verbs.items():
        merged.setdefault((group, _ordered(granted)), []).append(resource)
    rules = [
        PolicyRule((group,), tuple(sorted(resources)), verb_tuple)
        for (group, verb_tuple), resources in merged.items()
    ]
    return sorted(rules, key=lambda r: (r.api_groups, r.resources))


def required_rules(graph: Graph, local_name: str = LOCAL_CLUSTER_NAME_DEFAULT) -> list[PolicyRule]:
    """The least-privilege rules this graph needs in this cluster, named `local_name` as a
    target (`kro generate rbac`, the pre-flight)."""
    return rules_for(required_permissions(graph, local_name))


def describe_missing(missing: Iterable[Permission]) -> str:
    """`missing permissions: apps/deployments: create, patch; services: delete` (sorted)."""
    by_resource: dict[tuple[str, str], set[str]] = {}
    for permission in missing:
        by_resource.setdefault((permission.group, permission.resource), set()).add(permission.verb)
    parts = [
        f"{_resource_name(group, resource)}: {', '.join(_ordered(verbs))}"
        for (group, resource), verbs in sorted(by_resource.items())
    ]
    return MISSING_PREFIX + "; ".join(parts)


def _ordered(verbs: Iterable[str]) -> tuple[str, ...]:
    rank = {verb: index for index, verb in enumerate(VERB_ORDER)}
    return tuple(sorted(set(verbs), key=lambda v: (rank.get(v, len(rank)), v)))


def _resource_name(group: str, resource: str) -> str:
    """`apps/deployments`; the core group has no prefix (`services`), as in an apiVersion."""
    return f"{group}/{resource}" if group else resource


# --- what kro holds ----------------------------------------------------------------------------


async def missing_permissions(
    client: Client, rules: Iterable[PolicyRule], *, concurrency: int = 8
) -> frozenset[Permission]:
    """The permissions of `rules` that kro's identity lacks in some namespace.

    One SelfSubjectAccessReview per permission, without a namespace (cluster-wide, as kro's
    informers watch), at most `concurrency` at a time. Raises KubeError when a review cannot be
    made: an unanswered question is not a missing permission.
    """
    wanted = sorted({p for rule in rules for p in rule.permissions()})
    limit = asyncio.Semaphore(concurrency)
    allowed: dict[Permission, bool] = {}
    failures: list[KubeError] = []

    async def review(permission: Permission) -> None:
        async with limit:
            if failures:  # one unanswered question already makes the whole answer unknown
                return
            try:
                allowed[permission] = await _is_allowed(client, permission)
            except KubeError as error:
                failures.append(error)

    async with asyncio.TaskGroup() as group:
        for permission in wanted:
            group.create_task(review(permission), name=f"permissions.review:{permission}")
    if failures:
        raise failures[0]
    return frozenset(p for p in wanted if not allowed[p])


async def missing_rules(client: Client, rules: Sequence[PolicyRule]) -> list[PolicyRule]:
    """`rules` reduced to what kro lacks, as rules (see `missing_permissions`)."""
    return rules_for(await missing_permissions(client, rules))


async def _is_allowed(client: Client, permission: Permission) -> bool:
    resource, _, subresource = permission.resource.partition("/")
    body = {
        "apiVersion": f"{SELF_SUBJECT_ACCESS_REVIEWS.group}/{SELF_SUBJECT_ACCESS_REVIEWS.version}",
        "kind": "SelfSubjectAccessReview",
        "spec": {
            "resourceAttributes": {
                "group": permission.group,
                "resource": resource,
                "subresource": subresource,
                "verb": permission.verb,
            }
        },
    }
    answer = await client.create(SELF_SUBJECT_ACCESS_REVIEWS, body)
    return bool((answer.get("status") or {}).get("allowed"))


@dataclass(frozen=True, slots=True)
class AccessCheck:
    """The outcome of one pre-flight: what is missing, or why kro could not tell."""

    missing: frozenset[Permission] = frozenset()
    error: str | None = None

    @property
    def complete(self) -> bool:
        return self.error is None and not self.missing


@dataclass(frozen=True, kw_only=True)
class CheckerOptions:
    """How often the pre-flight asks again.

    recheck_missing_s: while something is missing the RGD comes back after this long (and the
    cached answer is that old by then), so a role granted afterwards shows within it.
    recheck_failed_s: the same after the reviews themselves failed.
    granted_ttl_s: a complete answer is reused this long, whatever reconciles the RGD meanwhile;
    no requeue is scheduled for it (permissions revoked later show on a reconcile after that).
    concurrency: reviews in flight at once.
    """

    recheck_missing_s: float = 15.0
    recheck_failed_s: float = 60.0
    granted_ttl_s: float = 300.0
    concurrency: int = 8


@dataclass(slots=True)
class _Cached:
    check: AccessCheck
    at_s: float


@dataclass
class PermissionChecker:
    """Pre-flight reviews cached per rule set, so a reconcile does not send them every time.

    Two RGDs (or two generations of one) that need the same rules share one answer.
    """

    client: Client
    options: CheckerOptions = field(default_factory=CheckerOptions)
    clock: Callable[[], float] = time.monotonic
    _cache: dict[frozenset[Permission], _Cached] = field(default_factory=dict, init=False)

    async def check(self, rules: Sequence[PolicyRule]) -> AccessCheck:
        key = frozenset(p for rule in rules for p in rule.permissions())
        now = self.clock()
        cached = self._cache.get(key)
        if cached is not None and now - cached.at_s < self._ttl(cached.check):
            return cached.check
        try:
            missing = await missing_permissions(
                self.client, rules, concurrency=self.options.concurrency
            )
            check = AccessCheck(missing=missing)
        except KubeError as error:
            check = AccessCheck(error=str(error))
            log.warning("permissions.check_failed", error=check.error)
        self._cache[key] = _Cached(check, now)
        log.debug("permissions.checked", permissions=len(key), missing=len(check.missing))
        return check

    def recheck_after_s(self, check: AccessCheck) -> float | None:
        """When the RGD should be looked at again for this answer (None: no need)."""
        if check.error is not None:
            return self.options.recheck_failed_s
        return self.options.recheck_missing_s if check.missing else None

    def _ttl(self, check: AccessCheck) -> float:
        after = self.recheck_after_s(check)
        return self.options.granted_ttl_s if after is None else after


SetCondition = Callable[[str, str, str, str], None]
"""`cond(type, status, reason, message)` as the RGD reconciler stamps its conditions."""


async def report_permissions(
    checker: PermissionChecker,
    graph: Graph,
    status: MutableMapping[str, Any],
    cond: SetCondition,
    local_name: str = LOCAL_CLUSTER_NAME_DEFAULT,
) -> float | None:
    """Run the pre-flight for `graph`, report it in `status`, and return when to look again.

    Missing permissions are `PermissionsGranted=False` (and so make the RGD's Ready False, see
    `ready_dependents`): instances of this RGD cannot all work, and the platform team should
    see why at the RGD. A check that could not be made is Unknown. When kro holds everything
    the condition is removed, not set True: an RGD that is fine carries exactly upstream's
    conditions, which suites written against upstream compare position by position.
    `local_name`: the hub's cluster name (`--local-cluster-name`): a target naming it stays
    here, so its kinds are checked; one naming a member is that member's concern.
    """
    check = await checker.check(required_rules(graph, local_name))
    if check.error is not None:
        message = f"cannot check kro's permissions: {check.error}"
        cond(CONDITION_PERMISSIONS_GRANTED, STATUS_UNKNOWN, REASON_PERMISSION_CHECK_FAILED, message)
    elif check.missing:
        message = describe_missing(check.missing)
        cond(CONDITION_PERMISSIONS_GRANTED, STATUS_FALSE, REASON_MISSING_PERMISSIONS, message)
        log.info("permissions.missing", missing=message)
    elif remove_condition(status, CONDITION_PERMISSIONS_GRANTED):
        log.info("permissions.granted")
    return checker.recheck_after_s(check)


def ready_dependents(status: Mapping[str, Any]) -> tuple[str, ...]:
    """The conditions an RGD's root Ready aggregates: upstream's four (P-08), plus
    `PermissionsGranted` while it is False. An inconclusive check (Unknown) or one not run yet
    does not hold Ready back; a known missing permission does."""
    for condition in status.get("conditions") or ():
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == CONDITION_PERMISSIONS_GRANTED
            and condition.get("status") == STATUS_FALSE
        ):
            return (*RGD_DEPENDENT_CONDITIONS, CONDITION_PERMISSIONS_GRANTED)
    return tuple(RGD_DEPENDENT_CONDITIONS)
