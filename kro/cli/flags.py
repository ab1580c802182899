"""kro.cli.flags: the `kro controller` flags, spelled and defaulted exactly as upstream's.

The Helm chart renders these flags from its values, so a flag renamed here breaks every
install: tests/cli/test_flags.py pins each name and default. Durations accept Go's syntax
(`200ms`, `3s`, `1m30s`, `1000s`) because that is what chart values and upstream docs use.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}

FEATURE_GATES: Mapping[str, bool] = {
    "CELOmitFunction": False,
    "InstanceConditionEvents": False,
    "InstanceConditionMetrics": False,
}


def parse_duration(text: str) -> float:
    """Go `time.ParseDuration` for the forms kro's flags use; returns seconds."""
    value = text.strip()
    if value in ("0", "-0", "+0"):
        return 0.0
    position, total = 0, 0.0
    for match in _DURATION_PART.finditer(value):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNIT_S[match.group(2)]
        position = match.end()
    if position != len(value) or not value:
        raise argparse.ArgumentTypeError(f'invalid duration "{text}" (examples: 200ms, 3s, 1m30s)')
    return total


def parse_feature_gates(text: str) -> dict[str, bool]:
    """`Name=true,Other=false` -> {Name: True, Other: False}; unknown names are rejected."""
    gates = dict(FEATURE_GATES)
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, raw = item.partition("=")
        if not sep or raw.strip().lower() not in ("true", "false"):
            raise argparse.ArgumentTypeError(
                f"invalid feature gate {item!r}: expected Name=true|false"
            )
        if name not in FEATURE_GATES:
            known = ", ".join(sorted(FEATURE_GATES))
            raise argparse.ArgumentTypeError(f"unknown feature gate {name!r} (known: {known})")
        gates[name] = raw.strip().lower() == "true"
    return gates


@dataclass(frozen=True, kw_only=True)
class ControllerConfig:
    """Everything `kro controller` is configured with; one field per upstream flag."""

    metrics_bind_address: str = ":8078"
    health_probe_bind_address: str = ":8079"
    pprof_bind_address: str = ":6060"  # accepted for compatibility; no pprof server in Python
    leader_elect: bool = False
    enable_controller_warmup: bool = False
    leader_election_namespace: str = ""
    leader_election_lease_duration_s: float = 15.0
    leader_election_renew_deadline_s: float = 10.0
    leader_election_retry_period_s: float = 2.0
    allow_crd_deletion: bool = False
    graceful_shutdown_timeout_s: float = 60.0
    rgd_concurrent_reconciles: int = 1
    graph_revision_concurrent_reconciles: int = 1
    dynamic_concurrent_reconciles: int = 1
    rate_limiter_min_delay_s: float = 0.2
    rate_limiter_max_delay_s: float = 1000.0
    rate_limiter_rate_limit: int = 10
    rate_limiter_burst_limit: int = 100
    instance_requeue_interval_s: float = 3.0
    resync_period_s: int = 36000
    queue_max_retries: int = 20
    client_qps: float = 100.0
    client_burst: int = 150
    max_collection_size: int = 1000
    max_collection_dimension_size: int = 10
    max_graph_revisions: int = 5
    rgd_progress_requeue_delay_s: float = 3.0
    feature_gates: Mapping[str, bool] = field(default_factory=lambda: dict(FEATURE_GATES))
    kubeconfig: str | None = None
    log_level: str = "info"
    log_encoder: str = "console"
    log_development: bool = False


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "t", "yes"):
        return True
    if lowered in ("false", "0", "f", "no"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {text!r}")


# (flag, dest, type, default-from-ControllerConfig, help)
_FLAGS: tuple[tuple[str, str, object, str], ...] = (
    ("--metrics-bind-address", "metrics_bind_address", str, "Prometheus /metrics address"),
    ("--health-probe-bind-address", "health_probe_bind_address", str, "/healthz and /readyz"),
    ("--pprof-bind-address", "pprof_bind_address", str, "accepted for compatibility; unused"),
    ("--leader-elect", "leader_elect", _bool, "elect a leader on Lease controller.kro.run"),
    (
        "--enable-controller-warmup",
        "enable_controller_warmup",
        _bool,
        "start informers before winning leadership",
    ),
    ("--leader-election-namespace", "leader_election_namespace", str, "namespace of the Lease"),
    (
        "--leader-election-lease-duration",
        "leader_election_lease_duration_s",
        parse_duration,
        "how long non-leaders wait before taking over an unrenewed lease",
    ),
    (
        "--leader-election-renew-deadline",
        "leader_election_renew_deadline_s",
        parse_duration,
        "how long the leader keeps retrying to renew before giving up leadership",
    ),
    (
        "--leader-election-retry-period",
        "leader_election_retry_period_s",
        parse_duration,
        "wait between leader election attempts",
    ),
    (
        "--allow-crd-deletion",
        "allow_crd_deletion",
        _bool,
        "delete a generated CRD when its ResourceGraphDefinition is deleted",
    ),
    (
        "--graceful-shutdown-timeout",
        "graceful_shutdown_timeout_s",
        parse_duration,
        "how long in-flight reconciles may run after a shutdown signal",
    ),
    (
        "--resource-graph-definition-concurrent-reconciles",
        "rgd_concurrent_reconciles",
        int,
        "ResourceGraphDefinition workers",
    ),
    (
        "--graph-revision-concurrent-reconciles",
        "graph_revision_concurrent_reconciles",
        int,
        "GraphRevision workers",
    ),
    (
        "--dynamic-controller-concurrent-reconciles",
        "dynamic_concurrent_reconciles",
        int,
        "instance workers",
    ),
    (
        "--dynamic-controller-rate-limiter-min-delay",
        "rate_limiter_min_delay_s",
        parse_duration,
        "first retry delay of a failed instance (doubles per failure)",
    ),
    (
        "--dynamic-controller-rate-limiter-max-delay",
        "rate_limiter_max_delay_s",
        parse_duration,
        "longest retry delay of a failed instance",
    ),
    (
        "--dynamic-controller-rate-limiter-rate-limit",
        "rate_limiter_rate_limit",
        int,
        "instance reconciles per second, overall",
    ),
    (
        "--dynamic-controller-rate-limiter-burst-limit",
        "rate_limiter_burst_limit",
        int,
        "instance reconciles allowed in a burst above the rate",
    ),
    (
        "--instance-requeue-interval",
        "instance_requeue_interval_s",
        parse_duration,
        "delay of instance requeues; 0 disables them",
    ),
    (
        "--dynamic-controller-default-resync-period",
        "resync_period_s",
        int,
        "seconds between full re-lists of watched kinds",
    ),
    (
        "--dynamic-controller-default-queue-max-retries",
        "queue_max_retries",
        int,
        "retries of a failing instance before it is dropped until its next change",
    ),
    ("--client-qps", "client_qps", float, "API server requests per second"),
    ("--client-burst", "client_burst", int, "API server requests in a burst"),
    (
        "--rgd-max-collection-size",
        "max_collection_size",
        int,
        "most items one forEach may expand to",
    ),
    (
        "--rgd-max-collection-dimension-size",
        "max_collection_dimension_size",
        int,
        "most forEach iterators per resource",
    ),
    ("--rgd-max-graph-revisions", "max_graph_revisions", int, "<= 0 disables revision GC"),
    (
        "--rgd-progress-requeue-delay",
        "rgd_progress_requeue_delay_s",
        parse_duration,
        "wait before re-checking an RGD whose CRD or revision is not ready yet",
    ),
    ("--kubeconfig", "kubeconfig", str, "default: $KUBECONFIG, ~/.kube/config, in-cluster"),
    ("--log-level", "log_level", str, "debug, info, warning, error (zap: --zap-log-level)"),
    ("--log-encoder", "log_encoder", str, "console or json (zap: --zap-encoder)"),
    ("--log-development", "log_development", _bool, "human-friendly logs (zap: --zap-devel)"),
)

_ALIASES = {
    "--log-level": ["--zap-log-level"],
    "--log-encoder": ["--zap-encoder"],
    "--log-development": ["--zap-devel"],
}


_METAVARS: Mapping[str, str] = {
    "--kubeconfig": "FILE",
    "--leader-election-namespace": "NAMESPACE",
    "--log-level": "LEVEL",
    "--log-encoder": "FORMAT",
}


def _metavar(flag: str, kind: object) -> str:
    """What the value looks like, not the flag's name again (which argparse would repeat)."""
    if flag.endswith("-address"):
        return "HOST:PORT"
    names: dict[object, str] = {parse_duration: "DURATION", _bool: "BOOL", int: "N", float: "N"}
    return _METAVARS.get(flag) or names.get(kind, "VALUE")


def _shown(default: object, kind: object) -> str:
    """A default as a user would type it: `false`, `3s`, `200ms`, `none`."""
    if isinstance(default, bool):
        return str(default).lower()
    if kind is parse_duration and isinstance(default, float):
        if 0 < default < 1:
            return f"{default * 1000:g}ms"
        return f"{default:g}s"
    if default is None or default == "":
        return "none"
    return str(default)


def add_controller_flags(parser: argparse.ArgumentParser) -> None:
    """Declare every controller flag on `parser` with upstream's defaults."""
    defaults = ControllerConfig()
    for flag, dest, kind, help_text in _FLAGS:
        default = getattr(defaults, dest)
        parser.add_argument(
            flag,
            *_ALIASES.get(flag, []),
            dest=dest,
            type=kind,  # type: ignore[arg-type]
            default=default,
            metavar=_metavar(flag, kind),
            help=f"{help_text} (default: {_shown(default, kind)})",
        )
    parser.add_argument(
        "--feature-gates",
        dest="feature_gates",
        type=parse_feature_gates,
        default=dict(FEATURE_GATES),
        metavar="GATES",
        help="Name=true|false,... (" + ", ".join(sorted(FEATURE_GATES)) + ")",
    )


def config_from_args(args: argparse.Namespace) -> ControllerConfig:
    names = [dest for _, dest, _, _ in _FLAGS] + ["feature_gates"]
    return ControllerConfig(**{name: getattr(args, name) for name in names})


def parse_controller_args(argv: Sequence[str]) -> ControllerConfig:
    """Parse `kro controller` arguments (used by tests and by the command)."""
    parser = argparse.ArgumentParser(prog="kro controller")
    add_controller_flags(parser)
    return config_from_args(parser.parse_args(list(argv)))
