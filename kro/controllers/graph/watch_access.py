"""kro.controllers.graph.watch_access: a Graph never makes kro watch what its ServiceAccount
could not read itself (V-54).

kro's watches run as kro, cluster-wide. Before a pass declares a read, kro asks (a
SelfSubjectAccessReview as the Graph's ServiceAccount) whether it may `watch` the kind there.
If not, the watch is not registered: the pass still reads and applies as the ServiceAccount,
but changes no longer bring the Graph back, so it is looked at again a minute later
(`skipped`) and a later grant is picked up without an edit. A yes is kept for a minute.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final

import structlog

from kro.dynamic import ObjectRef, ScalarWatch, WatchCoordinator
from kro.dynamic.watches import WatchRequest
from kro.runtime.client import Client
from kro.runtime.errors import KubeError
from kro.runtime.gvk import GVR

__all__ = ["AccessAnswers", "AccessKey", "ApplierWatches", "may"]

log = structlog.get_logger(__name__)

REVIEWS: Final = GVR("authorization.k8s.io", "v1", "selfsubjectaccessreviews")
ANSWER_TTL_S: Final = 60.0
MAX_ANSWERS: Final = 4096


AccessKey = tuple[str, str, GVR, str, str]
"""(identity, verb, resource, namespace, name): one question to the API server."""


class AccessAnswers:
    """The API server's yes, per question (`AccessKey`), for `ANSWER_TTL_S`; a no is not kept
    (the next pass asks again: the grant may come any time)."""

    def __init__(self) -> None:
        self._yes: OrderedDict[AccessKey, float] = OrderedDict()

    def allowed(self, key: AccessKey) -> bool:
        at = self._yes.get(key)
        return at is not None and time.monotonic() - at <= ANSWER_TTL_S

    def allow(self, key: AccessKey) -> None:
        self._yes[key] = time.monotonic()
        self._yes.move_to_end(key)
        while len(self._yes) > MAX_ANSWERS:
            self._yes.popitem(last=False)


class ApplierWatches:
    """The engine's `Watches` for one Graph's pass: the coordinator, gated as above."""

    def __init__(
        self,
        coordinator: WatchCoordinator,
        client: Client,
        username: str,
        answers: AccessAnswers,
    ) -> None:
        self._coordinator = coordinator
        self._client = client
        self._username = username
        self._answers = answers
        self._refused: set[AccessKey] = set()
        self.skipped = False
        """A watch was not registered this pass: come back in `ANSWER_TTL_S` to ask again."""

    async def watch(self, parent: ObjectRef, request: WatchRequest) -> None:
        key = (self._username, "watch", request.gvr, request.namespace or "", "")
        if key not in self._refused and await may(self._client, self._answers, key):
            await self._coordinator.watch(parent, request)
            return
        self._refused.add(key)  # asked once a pass
        self.skipped = True
        log.warning(
            "graph.watch_skipped",
            graph=f"{parent.namespace}/{parent.name}",
            resource=request.gvr.resource,
            group=request.gvr.group,
            namespace=request.namespace or "",
            service_account=self._username,
            detail="drift detection degraded: the ServiceAccount may not watch this kind",
        )

    def cached_object(self, request: ScalarWatch) -> tuple[bool, Mapping[str, Any] | None]:
        """The informer cache answers only for a kind this ServiceAccount may watch (the
        cache is kro's: it must not tell the Graph what its identity may not see)."""
        key = (self._username, "watch", request.gvr, request.namespace or "", "")
        if key in self._refused or not self._answers.allowed(key):
            return False, None
        return self._coordinator.cached_object(request)

    def declared(self, parent: ObjectRef, request: WatchRequest) -> bool:
        return self._coordinator.declared(parent, request)

    @property
    def shard_version(self) -> int:
        return self._coordinator.shard_version


async def may(client: Client, answers: AccessAnswers, key: AccessKey) -> bool:
    """Whether the identity of `client` may do what `key` asks (a SelfSubjectAccessReview,
    its yes kept in `answers`); an unanswered question is a no, asked again next time."""
    if answers.allowed(key):
        return True
    _, verb, gvr, namespace, name = key
    attributes = {"group": gvr.group, "version": gvr.version, "resource": gvr.resource}
    attributes |= {k: v for k, v in (("verb", verb), ("namespace", namespace), ("name", name)) if v}
    body = {
        "apiVersion": f"{REVIEWS.group}/{REVIEWS.version}",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }
    try:
        answer = await client.create(REVIEWS, body)
    except KubeError as error:  # inconclusive: no, and asked again next time
        log.warning(
            "graph.access_review_failed", resource=gvr.resource, verb=verb, error=str(error)
        )
        return False
    allowed = bool((answer.get("status") or {}).get("allowed"))
    if allowed:
        answers.allow(key)
    return allowed
