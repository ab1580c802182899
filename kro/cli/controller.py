"""kro.cli.controller: `kro controller` — run kro's controllers until SIGTERM.

This is the only place that wires process-wide concerns: logging format, the Prometheus
registry, leader election identity, probe and metrics addresses from upstream's flags.

A mistake in the environment is the user's to fix, so it ends the process with one line on
stderr and exit status 1, never a traceback, and before anything starts: a probe or metrics
port another process holds, a kubeconfig that is missing or unreadable, an API server that does
not answer or refuses the credentials. (Bad flags are refused earlier, by kro.cli.flags, with
exit status 2.) Failures once running are the manager's: logged, then exit status 1.

`--metrics-bind-address=0` turns metrics off entirely: nothing is served on /metrics and
nothing is recorded (the controllers get the no-op provider).

Outside a pod, leader election puts its Lease in the kubeconfig context's namespace (the one
kubectl would use), not silently in `default`; the namespace is logged at start.

`--shards=auto` always campaigns for the leader Lease, whatever `--leader-elect` says (the other
leader-election flags apply as usual): every replica runs every controller and reconciles its
share of the instances, and only the one holding the Lease writes RGDs, GraphRevisions and
CRDs (kro.controllers.leadership). Without a leader nobody would.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
import sys
import uuid
from pathlib import Path
from typing import Final

import structlog

from kro.api.graph import GRAPH_CRD_NAME, GRAPH_GROUP, GRAPH_PLURAL, GRAPH_VERSION
from kro.api.names import (
    FEATURE_CONSERVATIVE_CRD_COMPARISON,
    FEATURE_DEFERRED_SCHEMA_RESOLUTION,
    FEATURE_DELETION_POLICY,
    FEATURE_GRAPH_KIND,
    FEATURE_MULTI_CLUSTER,
    LEADER_ELECTION_LEASE,
)
from kro.cli.flags import ControllerConfig
from kro.controllers.app import AppOptions, ClusterRegistryOptions, KroApp
from kro.controllers.instance import InstanceOptions
from kro.controllers.rgd import RGDOptions
from kro.dynamic import DynamicControllerOptions
from kro.graph.options import BuildOptions
from kro.runtime.client import Client, ClientOptions
from kro.runtime.config import ConfigError, ConnectionConfig, load_default
from kro.runtime.errors import ApiError, NoKindMatch, TransportError, Unauthorized
from kro.runtime.gvk import GVR
from kro.runtime.leaderelection import LeaderElectionConfig
from kro.runtime.logging import configure
from kro.runtime.manager import GcTuning, Manager, ManagerOptions, parse_bind_address
from kro.runtime.metrics import NOOP, MetricsProvider
from kro.runtime.prometheus import PrometheusProvider
from kro.runtime.sharding import ShardingConfig, ShardMembership, ShardView
from kro.runtime.tlsprocess import set_tls_read_buffer

log = structlog.get_logger(__name__)

PROG: Final = "kro controller"
EXIT_ENVIRONMENT: Final = 1
API_CHECK_TIMEOUT_S: Final = 15.0
"""How long the start-up check waits for the API server's /version."""

GRAPHS: Final = GVR(GRAPH_GROUP, GRAPH_VERSION, GRAPH_PLURAL)
GRAPH_CRD_MISSING: Final = (
    f"the {FEATURE_GRAPH_KIND} feature gate is on but the API server does not serve "
    f"{GRAPH_CRD_NAME} (the Graph CRD is not installed): install it with `kubectl apply "
    f"--server-side -f kro.run_graphs.yaml` from the chart's crds/ directory (Helm installs CRDs "
    f"only on first install, never on upgrade), or turn {FEATURE_GRAPH_KIND} off"
)

_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
HOME_KUBECONFIG: Final = Path("~/.kube/config")


class StartupError(Exception):
    """The environment is not fit to run in; the message is the whole story for the user."""


def app_options(config: ControllerConfig) -> AppOptions:
    """Map upstream's flags onto the controllers' options."""
    build = BuildOptions(
        max_collection_size=config.max_collection_size,
        max_collection_dimension_size=config.max_collection_dimension_size,
        omit_function=bool(config.feature_gates.get("CELOmitFunction")),
        cel_cost_limit=config.cel_cost_limit,
        deletion_policy=bool(config.feature_gates.get(FEATURE_DELETION_POLICY)),
        deferred_schema_resolution=bool(
            config.feature_gates.get(FEATURE_DEFERRED_SCHEMA_RESOLUTION)
        ),
        multi_cluster=bool(config.feature_gates.get(FEATURE_MULTI_CLUSTER)),
        cluster_secrets_namespace=cluster_secrets_namespace(config),
    )
    return AppOptions(
        rgd=RGDOptions(
            allow_crd_deletion=config.allow_crd_deletion,
            max_graph_revisions=config.max_graph_revisions,
            progress_requeue_delay_s=config.rgd_progress_requeue_delay_s,
            conservative_crd_comparison=bool(
                config.feature_gates.get(FEATURE_CONSERVATIVE_CRD_COMPARISON)
            ),
            build=build,
            instance=InstanceOptions(
                requeue_interval_s=config.instance_requeue_interval_s,
                requeue_max_interval_s=config.instance_requeue_max_interval_s,
                max_collection_size=config.max_collection_size,
                condition_events=bool(config.feature_gates.get("InstanceConditionEvents")),
            ),
        ),
        apply_concurrency=config.apply_concurrency,
        skip_unchanged=config.skip_unchanged,
        dynamic=DynamicControllerOptions(
            workers=config.dynamic_concurrent_reconciles,
            retry_min_delay_s=config.rate_limiter_min_delay_s,
            retry_max_delay_s=config.rate_limiter_max_delay_s,
            retry_qps=float(config.rate_limiter_rate_limit),
            retry_burst=config.rate_limiter_burst_limit,
            max_retries=config.queue_max_retries,
            unfinished_work_period_s=0.5,
        ),
        rgd_workers=config.rgd_concurrent_reconciles,
        graph_revision_workers=config.graph_revision_concurrent_reconciles,
        graph_kind=bool(config.feature_gates.get(FEATURE_GRAPH_KIND)),
        controller_namespace=config.controller_namespace,
        controller_service_account=config.controller_service_account,
        graph_concurrent_reconciles=config.graph_concurrent_reconciles,
        clusters=ClusterRegistryOptions(
            namespace=cluster_secrets_namespace(config) or "kro-system",
            label=config.cluster_secrets_label,
            key=config.cluster_secrets_key,
            local_name=config.local_cluster_name,
        )
        if config.feature_gates.get(FEATURE_MULTI_CLUSTER)
        else None,
        enable_multicluster=config.enable_multicluster,
        feature_gates=dict(config.feature_gates),
        state_gauges=os.environ.get("KRO_STATE_GAUGES", "1") != "0",
    )


def cluster_secrets_namespace(config: ControllerConfig) -> str:
    """M-02: where member clusters' Secrets live: `--cluster-secrets-namespace`, else kro's own
    namespace (`--controller-namespace`)."""
    return config.cluster_secrets_namespace or config.controller_namespace


def resync_period(config: ControllerConfig) -> float | None:
    """`--dynamic-controller-default-resync-period` (0: never), for the manager's informers."""
    return float(config.resync_period_s) or None


def lease_namespace(config: ControllerConfig) -> tuple[str, str]:
    """Where the Lease goes, and why: the flag, the pod's namespace, or (outside a pod) the
    kubeconfig context's namespace, `default` when the context names none."""
    if config.leader_election_namespace:
        return config.leader_election_namespace, "flag"
    if _NAMESPACE_FILE.exists():
        return _NAMESPACE_FILE.read_text().strip(), "pod"
    from kro.cli.explain import context_namespace  # only outside a pod: not at every start

    kubeconfig = config.kubeconfig or os.environ.get("KUBECONFIG") or None
    return context_namespace(kubeconfig, None), "kubeconfig"


def _leader_election(config: ControllerConfig) -> LeaderElectionConfig | None:
    """`--leader-elect`, or `--shards=auto` (which needs a leader for its writes)."""
    sharded = config.shards == "auto"
    if not config.leader_elect and not sharded:
        return None
    namespace, source = lease_namespace(config)
    log.info(
        "controller.leader_election",
        lease=LEADER_ELECTION_LEASE,
        lease_namespace=namespace,
        namespace_from=source,
        # Sharded, the leader writes RGDs, GraphRevisions and CRDs; every replica reconciles.
        leader_writes_only=sharded,
    )
    return LeaderElectionConfig(
        lease_name=LEADER_ELECTION_LEASE,
        lease_namespace=namespace,
        identity=f"{socket.gethostname()}_{uuid.uuid4()}",
        lease_duration_s=config.leader_election_lease_duration_s,
        renew_deadline_s=config.leader_election_renew_deadline_s,
        retry_period_s=config.leader_election_retry_period_s,
    )


def check_ports(config: ControllerConfig) -> None:
    """Raise StartupError naming the flag whose port another process holds.

    Checked before connecting, so a second controller started by mistake says so at once
    instead of syncing caches first. (The manager binds for real later; a port taken in
    between is reported the same way, by `run_controller`.)
    """
    flags = (
        ("--health-probe-bind-address", config.health_probe_bind_address),
        ("--metrics-bind-address", config.metrics_bind_address),
    )
    for flag, address in flags:
        parsed = parse_bind_address(address)
        if parsed is None or parsed[1] == 0:
            continue
        host, port = parsed
        family = socket.AF_INET6 if host and ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host or ("::" if family == socket.AF_INET6 else ""), port))
            except OSError as error:
                raise StartupError(_bind_message(flag, address, error)) from None


def _bind_message(flag: str, address: str, error: OSError) -> str:
    if error.errno == errno.EADDRINUSE:
        return f"port {address} is already in use ({flag}={address}): is another kro running?"
    return f"cannot listen on {address} ({flag}={address}): {error.strerror or error}"


async def load_connection(config: ControllerConfig) -> ConnectionConfig:
    """The kubeconfig (flag, $KUBECONFIG, ~/.kube/config) or the pod's service account.

    A file that is not there is said in those words before the loader is asked: the loader
    would log a warning of its own and then complain about a missing `current-context`.
    """
    path = config.kubeconfig or None
    missing = missing_kubeconfig(path)
    if missing is not None:
        raise StartupError(missing)
    quiet = logging.getLogger("kubernetes_asyncio")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # its warnings repeat what the ConfigError says
    try:
        return await load_default(path)
    except ConfigError as error:
        raise StartupError(str(error)) from None
    finally:
        quiet.setLevel(level)


def missing_kubeconfig(path: str | None) -> str | None:
    """Why no kubeconfig can be loaded (`path` is the flag's), or None when one may be."""
    listed = [p for p in (os.environ.get("KUBECONFIG") or "").split(os.pathsep) if p]
    if path is not None:
        return None if Path(path).is_file() else f"kubeconfig {path} does not exist (--kubeconfig)"
    if listed:
        if any(Path(p).is_file() for p in listed):
            return None
        return f"no kubeconfig file exists at KUBECONFIG={os.pathsep.join(listed)}"
    if HOME_KUBECONFIG.expanduser().is_file() or os.environ.get("KUBERNETES_SERVICE_HOST"):
        return None
    return (
        f"no kubeconfig: pass --kubeconfig FILE or set KUBECONFIG ({HOME_KUBECONFIG} does not "
        "exist, and this is not a pod)"
    )


async def check_api_server(connection: ConnectionConfig) -> None:
    """One GET /version without retries: an API server that cannot be reached, or that
    refuses the credentials, is a StartupError. (Any other answer will do: /version is
    readable by everyone who can authenticate.)"""
    options = ClientOptions(max_retries=0, connect_timeout_s=5.0, request_timeout_s=10.0)
    async with Client.from_config(connection, options) as probe:
        try:
            async with asyncio.timeout(API_CHECK_TIMEOUT_S):
                await probe.request("GET", "/version")
        except Unauthorized:
            raise StartupError(
                f"the API server at {connection.server} refused the credentials "
                "(401 Unauthorized): check the kubeconfig's user"
            ) from None
        except (TransportError, TimeoutError) as error:
            raise StartupError(
                f"cannot reach the API server at {connection.server}: {error}"
            ) from None


async def graph_crd_served(client: Client) -> bool:
    """Whether discovery lists `graphs.kro.run`. Checked at start-up with GraphKind on:
    upstream notices a missing Graph CRD only when its Graph watch gives up, minutes later, and
    then stops RGDs too; one error line now, and a non-zero exit, tell the operator what to
    install. A discovery that cannot be read at all is a StartupError."""
    try:
        await client.mapper.kind_for(GRAPHS)
    except NoKindMatch:
        return False
    except (ApiError, TransportError) as error:
        raise StartupError(f"cannot read the API server's discovery: {error}") from None
    return True


def fail(message: str) -> int:
    """Tell the user, in one line, and return the exit status for a bad environment."""
    sys.stderr.write(f"{PROG}: {message}\n")
    sys.stderr.flush()
    return EXIT_ENVIRONMENT


async def run_controller(config: ControllerConfig) -> int:
    """Run until stopped; returns the process exit code."""
    # --zap-devel: zap's development preset raises the default level to debug (the default
    # encoder is already the console one).
    level = "debug" if config.log_development and config.log_level == "info" else config.log_level
    configure("json" if config.log_encoder == "json" else "console", level)
    set_tls_read_buffer()  # the controller owns its process: 32 KiB, not 256, per connection
    try:
        check_ports(config)
        connection = await load_connection(config)
        await check_api_server(connection)
    except StartupError as error:
        return fail(str(error))
    metrics_on = parse_bind_address(config.metrics_bind_address) is not None
    metrics: MetricsProvider = PrometheusProvider() if metrics_on else NOOP
    client = Client.from_config(
        connection,
        ClientOptions(
            qps=config.client_qps,
            burst=config.client_burst,
            metrics=metrics,
            user_agent="kro-python/controller",
        ),
    )
    try:
        log.info("controller.connected", server=connection.server)
        if config.feature_gates.get(FEATURE_GRAPH_KIND):
            try:
                served = await graph_crd_served(client)
            except StartupError as error:
                return fail(str(error))
            if not served:
                log.error(
                    "controller.graph_crd_missing",
                    crd=GRAPH_CRD_NAME,
                    error=GRAPH_CRD_MISSING,
                    exit_code=EXIT_ENVIRONMENT,
                )
                return EXIT_ENVIRONMENT
        return await _run(config, client, metrics)
    finally:
        await client.close()


_BIND_ERRORS: Final = frozenset({errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES})


def _sharding(
    config: ControllerConfig, client: Client, metrics: MetricsProvider
) -> ShardMembership | None:
    """`--shards=auto`: this replica's member Lease and view, next to the leader Lease."""
    if config.shards != "auto":
        return None
    namespace, _ = lease_namespace(config)
    identity = f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
    view = ShardView(metrics=metrics, identity=identity)
    sharding = ShardingConfig(
        identity=identity,
        namespace=namespace,
        lease_duration_s=config.leader_election_lease_duration_s,
        renew_deadline_s=config.leader_election_renew_deadline_s,
        retry_period_s=config.leader_election_retry_period_s,
    )
    log.info("controller.sharding", member_lease=sharding.lease_name, lease_namespace=namespace)
    return ShardMembership(client, sharding, view, metrics=metrics)


async def _run(config: ControllerConfig, client: Client, metrics: MetricsProvider) -> int:
    membership = _sharding(config, client, metrics)
    manager = Manager(
        ManagerOptions(
            health_probe_bind_address=config.health_probe_bind_address,
            metrics_bind_address=config.metrics_bind_address,
            # Sharded replicas all run every controller (KroApp); the Lease decides
            # only who writes RGDs, GraphRevisions and CRDs.
            leader_election=_leader_election(config),
            graceful_shutdown_timeout_s=config.graceful_shutdown_timeout_s,
            gc_tuning=GcTuning(),  # the controller owns its process; an embedding library not
            resync_period_s=resync_period(config),
            shard=membership.view if membership is not None else None,
        ),
        client=client,
        metrics=metrics if isinstance(metrics, PrometheusProvider) else None,
    )
    KroApp(manager, app_options(config), metrics=metrics)
    if membership is not None:
        manager.add_runnable(membership)
    log.info(
        "controller.starting",
        metrics=config.metrics_bind_address,
        health=config.health_probe_bind_address,
        leader_elect=config.leader_elect or membership is not None,
        shards=config.shards,
    )
    try:
        await manager.run()
    except OSError as error:
        if error.errno not in _BIND_ERRORS:
            raise
        # A port taken between check_ports and the manager's bind.
        return fail(f"cannot serve probes or metrics: {error.strerror or error}")
    except Exception as exc:
        # The manager logged it (manager.fatal) and stopped everything: exit non-zero so
        # that the kubelet starts a fresh process (leadership lost, a cache that cannot
        # sync, a component that failed).
        log.error("controller.exiting", reason=type(exc).__name__, exit_code=1)
        return 1
    return 0
