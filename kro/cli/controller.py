"""kro.cli.controller: `kro controller` — run kro's controllers until SIGTERM.

This is the only place that wires process-wide concerns: logging format, the Prometheus
registry, leader election identity, probe and metrics addresses from upstream's flags.
"""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path

import structlog

from kro.api.names import LEADER_ELECTION_LEASE
from kro.cli.flags import ControllerConfig
from kro.controllers.app import AppOptions, KroApp
from kro.controllers.instance import InstanceOptions
from kro.controllers.rgd import RGDOptions
from kro.dynamic import DynamicControllerOptions
from kro.graph.builder import BuildOptions
from kro.runtime.client import Client, ClientOptions
from kro.runtime.leaderelection import LeaderElectionConfig
from kro.runtime.logging import configure
from kro.runtime.manager import Manager, ManagerOptions
from kro.runtime.prometheus import PrometheusProvider

log = structlog.get_logger(__name__)

_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def app_options(config: ControllerConfig) -> AppOptions:
    """Map upstream's flags onto the controllers' options."""
    build = BuildOptions(
        max_collection_size=config.max_collection_size,
        max_collection_dimension_size=config.max_collection_dimension_size,
        omit_function=bool(config.feature_gates.get("CELOmitFunction")),
    )
    return AppOptions(
        rgd=RGDOptions(
            allow_crd_deletion=config.allow_crd_deletion,
            max_graph_revisions=config.max_graph_revisions,
            progress_requeue_delay_s=config.rgd_progress_requeue_delay_s,
            build=build,
            instance=InstanceOptions(
                requeue_interval_s=config.instance_requeue_interval_s,
                max_collection_size=config.max_collection_size,
                condition_events=bool(config.feature_gates.get("InstanceConditionEvents")),
            ),
        ),
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
        resync_period_s=float(config.resync_period_s) or None,
        feature_gates=dict(config.feature_gates),
    )


def _leader_election(config: ControllerConfig) -> LeaderElectionConfig | None:
    if not config.leader_elect:
        return None
    namespace = config.leader_election_namespace
    if not namespace:
        namespace = _NAMESPACE_FILE.read_text().strip() if _NAMESPACE_FILE.exists() else "default"
    return LeaderElectionConfig(
        lease_name=LEADER_ELECTION_LEASE,
        lease_namespace=namespace,
        identity=f"{socket.gethostname()}_{uuid.uuid4()}",
        lease_duration_s=config.leader_election_lease_duration_s,
        renew_deadline_s=config.leader_election_renew_deadline_s,
        retry_period_s=config.leader_election_retry_period_s,
    )


async def run_controller(config: ControllerConfig) -> int:
    """Run until stopped; returns the process exit code."""
    # --zap-devel: zap's development preset raises the default level to debug (the default
    # encoder is already the console one).
    level = "debug" if config.log_development and config.log_level == "info" else config.log_level
    configure("json" if config.log_encoder == "json" else "console", level)
    metrics = PrometheusProvider()
    client = await Client.from_kubeconfig(
        config.kubeconfig or os.environ.get("KUBECONFIG") or None,
        options=ClientOptions(
            qps=config.client_qps,
            burst=config.client_burst,
            metrics=metrics,
            user_agent="kro-python/controller",
        ),
    )
    try:
        app = KroApp(client, app_options(config), metrics=metrics)
        manager = Manager(
            ManagerOptions(
                health_probe_bind_address=config.health_probe_bind_address,
                metrics_bind_address=config.metrics_bind_address,
                leader_election=_leader_election(config),
                graceful_shutdown_timeout_s=config.graceful_shutdown_timeout_s,
            ),
            client=client,
            metrics=metrics,
        )
        app.install(manager)
        log.info(
            "controller.starting",
            metrics=config.metrics_bind_address,
            health=config.health_probe_bind_address,
            leader_elect=config.leader_elect,
        )
        try:
            await manager.run()
        except Exception as exc:
            # The manager logged it (manager.fatal) and stopped everything: exit non-zero so
            # that the kubelet starts a fresh process (leadership lost, a cache that cannot
            # sync, a component that failed).
            log.error("controller.exiting", reason=type(exc).__name__, exit_code=1)
            return 1
    finally:
        await client.close()
    return 0
