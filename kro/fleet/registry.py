"""kro.fleet.registry: the live set of member clusters, one client each (M-02, M-04, M-05, M-06).

A member is a Secret in one namespace carrying one label, its kubeconfig under one data key
(M-02); its name is the Secret's name. The hub itself is always there under the local name,
with the hub's own client, and is never read from a Secret.

The registry watches those Secrets through a kro.runtime informer (the manager's cache when it
is given one, so the watch is shared and counted in readiness; its own otherwise):

* a new Secret is checked (`kro.fleet.credentials`, M-03), gets a client of its own and is
  probed at once, so it is usable within seconds (M-04);
* a Secret whose kubeconfig changed (credential rotation) gets a new client under the same
  name; the old one is closed once its probe is stopped. The member's readiness is kept until
  the new client's probe says otherwise, so rotating a working credential never makes the
  cluster flap. Whoever holds the old client must ask `client_for` again on "updated";
* a deleted or unlabelled Secret removes the member and closes its client (its objects are
  left where they are; M-04).

Why one client and one probe task per member (M-05): each client has its own token bucket
(the hub's qps and burst each), connection pools, discovery and RESTMapper, and each probe is
bounded by a timeout in a task of its own, so a slow, unreachable or forbidding member never
delays another member or the hub.

Probes (M-06): `/version` then discovery (`kro.fleet.probe`), at once for a new or rotated
member and every `probe_interval_s` (30 s) after that while the member has users (a
`client_for` call since the last probe counts as use). A member that is not Ready is probed on
every interval too, used or not, so that one that comes back is seen without waiting for a
user to fail on it first.

Passive health (M-06): a member's client names it in what a request that got no answer raises
(`kro.fleet.errors.unanswered_in`). When one of its requests gets no answer at all, the member
is marked not Ready at once (its reason says what failed), rather than up to 30 s later by its
next probe, so owners are told `ClusterUnreachable` and leave it alone until it is back. It is
back as soon as one of its requests is answered again (its informers keep trying) or its next
probe passes. A member whose own requests since the last probe were all answered needs no
probe at all.

Nothing from a Secret but its name and the server URL is ever logged, kept in `reason`,
published in metrics or passed to listeners (M-06).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Final, Literal

import structlog

from kro.api.names import (
    CLUSTER_SECRETS_KEY_DEFAULT,
    CLUSTER_SECRETS_LABEL_DEFAULT,
    LOCAL_CLUSTER_NAME_DEFAULT,
)
from kro.fleet.credentials import MemberCredentials, member_connection, secret_name
from kro.fleet.errors import ClusterNotFound, ClusterNotReady, ClusterRefused, unanswered_in
from kro.fleet.metrics import FleetMetrics
from kro.fleet.probe import ProbeFailed, probe
from kro.runtime.cache import InformerCache
from kro.runtime.client import Client, ClientOptions
from kro.runtime.config import ConnectionConfig
from kro.runtime.gvk import GVR
from kro.runtime.informer import Informer
from kro.runtime.metrics import MetricsProvider

__all__ = [
    "MEMBER_RETRIES",
    "PROBE_INTERVAL_S",
    "PROBE_TIMEOUT_S",
    "SECRETS",
    "ClusterEvent",
    "ClusterListener",
    "ClusterRegistry",
    "Member",
]

log = structlog.get_logger(__name__)

SECRETS: Final = GVR("", "v1", "secrets")
MEMBER_RETRIES: Final = 1
"""Retries of a member client's failed connections (and 429/503s): see `_install`."""
PROBE_INTERVAL_S: Final = 30.0
"""M-06: how often a member with users (or a member that is not Ready) is probed."""
PROBE_TIMEOUT_S: Final = 10.0
"""How long one probe (/version and discovery) may take before the member counts as unready."""
NOT_PROBED: Final = "not probed yet"

ClusterEvent = Literal["added", "updated", "removed", "ready", "unready"]
ClusterListener = Callable[[str, ClusterEvent], None]
"""Called with (cluster name, event) on the loop; must be quick (put a key on a queue)."""
ClientFactory = Callable[[ConnectionConfig, ClientOptions], Client]
"""Builds a member's client from its connection and options (tests substitute one)."""


@dataclass(frozen=True, kw_only=True)
class Member:
    """One cluster as the registry sees it now (a snapshot: ask again after a change).

    name: the cluster's name (the Secret's name, or the local name for the hub).
    secret: `namespace/name` of its Secret; "" for the hub.
    server: its API server URL; "" when its Secret was refused before a server was read.
    ready: its last probe passed (always True for the hub).
    version: the server's gitVersion from the last probe that passed ("" before one).
    reason: why it is not Ready: the refusal or the probe's failure; "" when Ready. Never a
        credential.
    client: its client (the hub's for the hub); None when its Secret was refused.
    refused: the refusal's code (`ExecPlugin`, `FilePath`, ...: kro.fleet.credentials.REASONS)
        when its Secret was refused, else "".
    local: True for the hub.
    """

    name: str
    secret: str
    server: str
    ready: bool
    version: str
    reason: str
    client: Client | None
    refused: str = ""
    local: bool = False


@dataclass(eq=False)
class _Slot:
    """A member's mutable state; only the registry touches it."""

    name: str
    secret: str
    digest: str  # of the kubeconfig's data, to tell a rotation from a metadata-only change
    server: str = ""
    client: Client | None = None
    ready: bool | None = None  # None: not probed yet
    version: str = ""
    reason: str = NOT_PROBED
    refused: str = ""  # the refusal's code (kro.fleet.credentials.REASONS), "" if accepted
    used: bool = False  # `client_for` was called since the last probe
    unreachable: bool = False  # not Ready because it did not answer (probe or passive)
    lost: bool = False  # marked not Ready by a user's unanswered request (passive health)
    answered: bool | None = None  # since the last probe: every request answered (None: none)
    generation: int = 0  # bumped by every new client: a stale probe's outcome is dropped
    prober: asyncio.Task[None] | None = None


class ClusterRegistry:
    """The member clusters of one hub (module docstring).

    hub: the hub's client: reads the Secrets, and is the local cluster's client.
    namespace, label (`key=value`), key: where the member Secrets are, how they are marked and
        which data key holds the kubeconfig (`--cluster-secrets-*`).
    local_name: the hub's own name (`--local-cluster-name`).
    options: copied for every member's client (default: the hub's), so each member gets its
        own limiter with the hub's qps and burst; its `metrics` is replaced by one that also
        counts `kro_cluster_requests_total` for that member.
    metrics: where the fleet's metrics go (default: `options.metrics`).
    cache: the manager's informer cache; the Secret informer is then the cache's (shared, run
        by the cache, counted in readiness). Without it the registry runs its own.
    probe_interval_s, probe_timeout_s: see PROBE_INTERVAL_S and PROBE_TIMEOUT_S.
    client_factory: builds a member's client (tests substitute it); None: a `Client` whose
        unanswered requests name the cluster and mark it not Ready at once.
    """

    def __init__(
        self,
        hub: Client,
        *,
        namespace: str,
        label: str = CLUSTER_SECRETS_LABEL_DEFAULT,
        key: str = CLUSTER_SECRETS_KEY_DEFAULT,
        local_name: str = LOCAL_CLUSTER_NAME_DEFAULT,
        options: ClientOptions | None = None,
        metrics: MetricsProvider | None = None,
        cache: InformerCache | None = None,
        probe_interval_s: float = PROBE_INTERVAL_S,
        probe_timeout_s: float = PROBE_TIMEOUT_S,
        client_factory: ClientFactory | None = None,
    ) -> None:
        label_key, equals, _ = label.partition("=")
        if not equals or not label_key:
            raise ValueError(f"label must be one key=value, got {label!r}")
        self.hub = hub
        self.namespace = namespace
        self.label = label
        self.key = key
        self.local_name = local_name
        self._options = options if options is not None else hub.options
        self._metrics = FleetMetrics(metrics if metrics is not None else self._options.metrics)
        self._cache = cache
        self._probe_interval_s = probe_interval_s
        self._probe_timeout_s = probe_timeout_s
        self._client_factory = client_factory
        self._slots: dict[str, _Slot] = {}
        self._listeners: tuple[ClusterListener, ...] = ()
        self._informer: Informer | None = None
        self._informer_task: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()
        self._changed = asyncio.Event()
        self._ignored: set[str] = set()
        self._running = False

    # -- life -----------------------------------------------------------------------------------

    async def start(self) -> None:
        """Watch the Secrets. Returns at once; `wait_synced` waits for the first list."""
        if self._running:
            raise RuntimeError("the cluster registry is already running")
        self._running = True
        self._metrics.set_ready(self.local_name, True)
        selection: dict[str, Any] = {"namespace": self.namespace, "label_selector": self.label}
        if self._cache is not None:
            informer = self._cache.informer(SECRETS, **selection)
        else:
            informer = Informer(self.hub, SECRETS, **selection)
            self._informer_task = asyncio.create_task(
                informer.run(), name=f"cluster-registry.informer:{self.namespace}"
            )
        self._informer = informer
        informer.add_handler(self)
        log.info(
            "cluster.registry_started",
            namespace=self.namespace,
            label=self.label,
            key=self.key,
            local=self.local_name,
        )

    async def stop(self) -> None:
        """Stop watching, stop every probe and close every member's client (not the hub's)."""
        if not self._running:
            return
        self._running = False
        if self._informer is not None:
            self._informer.remove_handler(self)
            self._informer = None
        if self._informer_task is not None:
            self._informer_task.cancel()
            await asyncio.wait([self._informer_task])
            self._informer_task = None
        slots, self._slots = list(self._slots.values()), {}
        for slot in slots:
            self._retire(slot.client, slot.prober)
            self._metrics.forget(slot.name)
        self._metrics.forget(self.local_name)
        while self._background:
            await asyncio.wait(list(self._background))
        self._notify_waiters()

    async def __aenter__(self) -> ClusterRegistry:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def has_synced(self) -> bool:
        """Whether the Secrets have been listed once: before that, an unknown name may be a
        member not seen yet rather than no member."""
        return self._informer is not None and self._informer.has_synced()

    async def wait_synced(self, timeout_s: float | None = None) -> bool:
        """Wait for the first list of the Secrets; False if `timeout_s` passes first."""
        if self._informer is None:
            raise RuntimeError("the cluster registry is not running")
        return await self._informer.wait_for_sync(timeout_s)

    # -- reading --------------------------------------------------------------------------------

    def names(self) -> list[str]:
        """Every cluster's name, the local one first, refused and unready members included."""
        return [self.local_name, *sorted(self._slots)]

    def get(self, name: str) -> Member | None:
        """A snapshot of the named cluster, or None if there is none."""
        if name == self.local_name:
            return self._local()
        slot = self._slots.get(name)
        return None if slot is None else _snapshot(slot)

    def members(self) -> list[Member]:
        """Snapshots of every cluster, in `names()` order."""
        found = (self.get(name) for name in self.names())
        return [member for member in found if member is not None]

    def client_for(self, name: str) -> Client:
        """The named cluster's client (the hub's for the local name), counted as use.

        Raises ClusterNotFound when no such member is registered and ClusterNotReady when it is
        registered but refused or failing its probe. Ask again after an "updated" event: the
        previous client is closed.
        """
        if name == self.local_name:
            return self.hub
        slot = self._slots.get(name)
        if slot is None:
            raise ClusterNotFound(name, namespace=self.namespace)
        slot.used = True
        if slot.client is None or slot.ready is not True:
            raise ClusterNotReady(
                name, reason=slot.reason or NOT_PROBED, unreachable=slot.unreachable
            )
        return slot.client

    def count_watches(self, count: Callable[[str], int]) -> None:
        """Export `kro_cluster_watch_count{cluster}` for every cluster in `names()`, each
        `count(cluster)` read at scrape time (kro.fleet.metrics). Call once per registry."""
        self._metrics.count_watches(self.names, count)

    def subscribe(self, listener: ClusterListener) -> Callable[[], None]:
        """Call `listener(name, event)` on every change; returns the call that unsubscribes.

        Events: "added" (a new Secret, refused or not), "updated" (its kubeconfig changed:
        a new client, or a refusal), "removed", "ready" (a probe passed after the member was
        not Ready), "unready" (a refusal or failed probe after it was Ready or unprobed).
        """
        self._listeners = (*self._listeners, listener)

        def unsubscribe() -> None:
            self._listeners = tuple(x for x in self._listeners if x is not listener)

        return unsubscribe

    async def wait_ready(self, name: str, timeout_s: float = 10.0) -> Member:
        """The member once it is Ready; TimeoutError (with its reason) after `timeout_s`."""
        try:
            async with asyncio.timeout(timeout_s):
                while True:
                    changed = self._changed
                    member = self.get(name)
                    if member is not None and member.ready:
                        return member
                    await changed.wait()
        except TimeoutError:
            member = self.get(name)
            why = "not registered" if member is None else member.reason
            raise TimeoutError(f"cluster {name!r} not ready after {timeout_s:g}s: {why}") from None

    # -- the Secret informer's handler ----------------------------------------------------------

    def on_add(self, obj: Mapping[str, Any]) -> None:
        self._upsert(obj)

    def on_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self._upsert(new)

    def on_delete(self, obj: Mapping[str, Any]) -> None:
        _, name = secret_name(obj)
        self._ignored.discard(name)
        slot = self._slots.pop(name, None)
        if slot is None:
            return
        self._retire(slot.client, slot.prober)
        self._metrics.forget(name)
        log.info("cluster.removed", cluster=name, secret=slot.secret)
        self._emit(name, "removed")

    # -- changes --------------------------------------------------------------------------------

    def _upsert(self, secret: Mapping[str, Any]) -> None:
        namespace, name = secret_name(secret)
        if name == self.local_name:
            if name not in self._ignored:
                self._ignored.add(name)
                log.warning(
                    "cluster.refused",
                    cluster=name,
                    secret=f"{namespace}/{name}",
                    reason="LocalName",
                    message="the hub's own name is never a Secret (--local-cluster-name)",
                )
            return
        digest = _digest(secret, self.key)
        slot = self._slots.get(name)
        if slot is not None and slot.digest == digest:
            return  # labels, annotations or another data key changed: same credentials
        outcome: MemberCredentials | ClusterRefused
        try:
            outcome = member_connection(secret, key=self.key)
        except ClusterRefused as refusal:
            outcome = refusal
        if slot is None:
            slot = _Slot(name=name, secret=f"{namespace}/{name}", digest=digest)
            self._slots[name] = slot
            self._metrics.set_ready(name, False)
            event: ClusterEvent = "added"
        else:
            slot.digest = digest
            event = "updated"
        follow_up = self._install(slot, outcome, rotated=event == "updated")
        self._emit(name, event)
        if follow_up is not None:
            self._emit(name, follow_up)

    def _install(
        self, slot: _Slot, outcome: MemberCredentials | ClusterRefused, *, rotated: bool
    ) -> ClusterEvent | None:
        """Give the slot its new client (and a probe of it), or its refusal; retire the old.
        Returns the readiness change to announce after "added" or "updated"."""
        self._retire(slot.client, slot.prober)
        slot.generation += 1
        slot.client = slot.prober = None
        slot.lost = slot.unreachable = False  # a new client: nothing is known of it yet
        if isinstance(outcome, ClusterRefused):
            slot.server = ""
            slot.refused = outcome.reason
            slot.reason = str(outcome)
            log.warning(
                "cluster.refused",
                cluster=slot.name,
                secret=slot.secret,
                reason=outcome.reason,
                message=outcome.detail,
            )
            return self._set_ready(slot, False)
        slot.server = outcome.server
        slot.refused = ""
        if slot.ready is not True:
            slot.reason = NOT_PROBED
        # One retry, not the hub's five (0.2 s to 3.2 s apart): a member that stopped
        # answering must not hold a worker for seconds per read while its probe catches up
        # (M-05: one member never delays another's work).
        options = dataclasses.replace(
            self._options,
            metrics=self._metrics.member_provider(
                slot.name, partial(self._answered, slot, slot.generation)
            ),
            max_retries=min(self._options.max_retries, MEMBER_RETRIES),
        )
        slot.client = self._new_client(slot, outcome.config, options)
        slot.prober = asyncio.create_task(
            self._probe_loop(slot, slot.generation, slot.client),
            name=f"cluster-registry.probe:{slot.name}",
        )
        fields = {"cluster": slot.name, "secret": slot.secret, "server": slot.server}
        if rotated:
            log.info("cluster.rotated", **fields, auth=outcome.auth)
        else:
            log.info("cluster.added", **fields, auth=outcome.auth)
        return None

    def _new_client(self, slot: _Slot, config: ConnectionConfig, options: ClientOptions) -> Client:
        if self._client_factory is not None:
            return self._client_factory(config, options)
        told = partial(self._unanswered, slot, slot.generation)
        return Client(config, replace(options, unanswered=unanswered_in(slot.name, told)))

    def _retire(self, client: Client | None, prober: asyncio.Task[None] | None) -> None:
        """Stop a probe and close its client in the background (closing awaits the sessions)."""
        if client is None and prober is None:
            return
        task = asyncio.create_task(_close(client, prober), name="cluster-registry.retire")
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- probes ---------------------------------------------------------------------------------

    async def _probe_loop(self, slot: _Slot, generation: int, client: Client) -> None:
        """Probe now, then every interval while the member is used or not Ready; a member
        whose own requests since the last probe were all answered needs none (its users just
        showed it serves), so a settled fleet sends nothing."""
        due = True
        while True:
            if due:
                slot.used, slot.answered = False, None
                try:
                    version = await probe(client, timeout_s=self._probe_timeout_s)
                except ProbeFailed as failure:
                    self._probed(slot, generation, None, str(failure), failure.unreachable)
                except Exception as error:  # a bug: say so, and keep the member unready
                    log.exception("cluster.probe_crashed", cluster=slot.name)
                    self._probed(slot, generation, None, f"probe failed: {type(error).__name__}")
                else:
                    self._probed(slot, generation, version, "")
            await asyncio.sleep(self._probe_interval_s)
            vouched = slot.answered is True and slot.ready is True
            due = slot.ready is not True or (slot.used and not vouched)
            if vouched:
                slot.used, slot.answered = False, None

    def _probed(
        self,
        slot: _Slot,
        generation: int,
        version: str | None,
        failure: str,
        unreachable: bool = False,
    ) -> None:
        if not self._current(slot, generation):
            return  # a rotation or a removal overtook this probe
        slot.lost = False
        if version is not None:
            slot.version, slot.reason, slot.unreachable = version, "", False
            event = self._set_ready(slot, True)
        else:
            slot.reason, slot.unreachable = failure, unreachable
            event = self._set_ready(slot, False)
        if event is not None:
            self._emit(slot.name, event)
        else:
            self._notify_waiters()

    def _current(self, slot: _Slot, generation: int) -> bool:
        """Whether `slot` with this client generation is still the member's."""
        return slot.generation == generation and self._slots.get(slot.name) is slot

    # -- passive health -------------------------------------------------------------------------

    def _unanswered(self, slot: _Slot, generation: int, cause: str) -> None:
        """A request of the member's client got no answer (`cause`): a Ready member is not
        Ready from now on (module docstring); its users are told ClusterUnreachable."""
        if not self._current(slot, generation) or slot.ready is not True:
            return
        slot.lost = slot.unreachable = True
        slot.reason = cause
        event = self._set_ready(slot, False)
        if event is not None:
            self._emit(slot.name, event)

    def _answered(self, slot: _Slot, generation: int, code: str) -> None:
        """One request of the member's client was answered with `code` ("<error>": none):
        any failure since the last probe makes the next one due; an answer brings a member
        back that only its users' unanswered requests had marked not Ready."""
        healthy = code[:1] in ("2", "3") or code in _HEALTHY_CODES
        slot.answered = healthy if slot.answered is None else slot.answered and healthy
        if not healthy or not slot.lost or not self._current(slot, generation):
            return
        slot.lost = slot.unreachable = False
        slot.reason = ""
        event = self._set_ready(slot, True)
        if event is not None:
            self._emit(slot.name, event)

    def _set_ready(self, slot: _Slot, ready: bool) -> ClusterEvent | None:
        """Record readiness; the event to announce when it changed (logged here)."""
        was = slot.ready
        slot.ready = ready
        self._metrics.set_ready(slot.name, ready)
        if was is ready:
            return None
        if ready:
            log.info("cluster.ready", cluster=slot.name, server=slot.server, version=slot.version)
            return "ready"
        log.warning("cluster.unready", cluster=slot.name, server=slot.server, reason=slot.reason)
        return "unready"

    # -- notifications ------------------------------------------------------------------------

    def _emit(self, name: str, event: ClusterEvent) -> None:
        for listener in self._listeners:
            try:
                listener(name, event)
            except Exception:
                log.exception("cluster.listener_failed", cluster=name, cluster_event=event)
        self._notify_waiters()

    def _notify_waiters(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def _local(self) -> Member:
        return Member(
            name=self.local_name,
            secret="",
            server=self.hub.config.server,
            ready=True,
            version="",
            reason="",
            client=self.hub,
            local=True,
        )


def _snapshot(slot: _Slot) -> Member:
    return Member(
        name=slot.name,
        secret=slot.secret,
        server=slot.server,
        ready=slot.ready is True,
        version=slot.version,
        reason=slot.reason,
        client=slot.client,
        refused=slot.refused,
    )


def _digest(secret: Mapping[str, Any], key: str) -> str:
    """A fingerprint of the kubeconfig's data, kept instead of a second copy of it."""
    data = secret.get("data") or {}
    value = data.get(key) if isinstance(data, Mapping) else None
    return hashlib.sha256(str(value or "").encode()).hexdigest()


async def _close(client: Client | None, prober: asyncio.Task[None] | None) -> None:
    if prober is not None:
        prober.cancel()
        await asyncio.wait([prober])
    if client is not None:
        await client.close()


_HEALTHY_CODES: Final = frozenset({"404", "409", "410", "422"})
"""Answers that say the member serves (besides 2xx and 3xx): the object, not the cluster."""
