"""kro.cli.flags: the `kro controller` flags, spelled and defaulted exactly as upstream's.

The Helm chart renders these flags from its values, so a flag renamed here breaks every
install: tests/cli/test_flags.py pins each name and default. Values are read the way upstream's
Go binary reads them, because that is what chart values and upstream docs use:

* durations in Go's syntax (`200ms`, `3s`, `1m30s`, `1000s`);
* booleans as Go's `flag` package takes them: `--leader-elect` alone means true, and
  `--leader-elect=false` (or `0`, `f`, `F`, `FALSE`, `False`) turns it off;
* log levels as controller-runtime's zap flags take them: `debug`, `info`, `warn`, `error`,
  `dpanic`, `panic`, `fatal` in any case, or an integer (a positive one is a debug verbosity,
  `-1` is zap's debug level, `0` is info). They are mapped onto the standard library's levels
  (`ControllerConfig.log_level`): Python has no verbosities below debug, and zap's three
  panicking levels all mean "critical only".

Every value is checked while the command line is parsed, so a bad one is a usage error (one
line, exit 2: `FlagParser`) and never a traceback later. The chart's values.schema.json accepts
no value this module rejects (tests/charts/test_values_schema_flags.py).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, NoReturn

from kro.api.names import FEATURE_GRAPH_KIND, FEATURE_MULTI_CLUSTER

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}

ZAP_LEVELS: Mapping[str, str] = {
    "debug": "debug",
    "info": "info",
    "warn": "warning",
    "error": "error",
    "dpanic": "critical",
    "panic": "critical",
    "fatal": "critical",
}
"""zap's level names and the standard library level each one maps to."""

LOG_ENCODERS = ("console", "json")

_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})

FEATURE_GATES: Mapping[str, bool] = {
    "CELOmitFunction": False,
    "InstanceConditionEvents": False,
    "InstanceConditionMetrics": False,
    "ConservativeCRDComparison": False,
    "DeletionPolicy": False,
    "GraphKind": False,
    "DeferredSchemaResolution": False,
    "MultiCluster": False,
}

GRAPH_KIND_FLAGS: Final = {
    "--controller-namespace": "controller_namespace",
    "--controller-service-account": "controller_service_account",
}
"""Required with GraphKind: kro must know its own ServiceAccount to refuse Graphs that would
impersonate it (a Graph applies as a ServiceAccount of its namespace, never as kro)."""


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


def parse_log_level(text: str) -> str:
    """A zap level (`warn`, `2`, `-1`) -> the standard library's level name (`warning`)."""
    value = str(text).strip()
    named = ZAP_LEVELS.get(value.lower())
    if named is not None:
        return named
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid log level {text!r} (debug, info, warn, error, dpanic, panic, fatal, "
            "or an integer verbosity such as 2)"
        ) from None
    return "info" if number == 0 else "debug"


def parse_log_encoder(text: str) -> str:
    if text not in LOG_ENCODERS:
        raise argparse.ArgumentTypeError(f"invalid log encoder {text!r} (console or json)")
    return text


def parse_bool(text: str) -> bool:
    """Go's strconv.ParseBool, which the `flag` package uses for `--flag=value`."""
    if text in _GO_TRUE:
        return True
    if text in _GO_FALSE:
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {text!r} (true or false)")


def parse_shards(text: str) -> str:
    """`--shards`: `off` (one leader reconciles everything) or `auto` (kro.runtime.sharding)."""
    value = text.strip().lower()
    if value not in ("off", "auto"):
        raise argparse.ArgumentTypeError(f"invalid shards mode {text!r} (off or auto)")
    return value


def parse_bind_address(text: str) -> str:
    """`host:port` (`:8078`, `127.0.0.1:8078`, `[::1]:8078`), or `0` to turn the server off."""
    if text in ("0", ""):
        return text
    host, sep, port = text.rpartition(":")
    ipv6 = host.startswith("[") and host.endswith("]")
    if not sep or not port.isdigit() or int(port) > 65535 or (":" in host and not ipv6):
        raise argparse.ArgumentTypeError(
            f"invalid address {text!r} (host:port such as :8078 or 127.0.0.1:8078, or 0 to "
            "turn it off)"
        )
    return text


def parse_label_pair(text: str) -> str:
    """`key=value`: one label a Secret must carry (`--cluster-secrets-label`)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or "," in text:
        raise argparse.ArgumentTypeError(
            f"invalid label {text!r} (one key=value, such as multicluster.runtime/cluster=true)"
        )
    return f"{key.strip()}={value.strip()}"


def _at_least(minimum: int) -> object:
    """An integer flag type that refuses values below `minimum` (e.g. zero workers)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


def _apply_concurrency(text: str) -> int:
    """`--apply-concurrency`: an integer; 0 or less means the default, 20 (upstream's rule)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None
    return value if value > 0 else 20


_apply_concurrency.__name__ = "integer"


def _positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


_POSITIVE = _at_least(1)
_NATURAL = _at_least(0)


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
    graph_concurrent_reconciles: int = 1
    controller_namespace: str = ""
    controller_service_account: str = ""
    enable_multicluster: bool = False
    cluster_secrets_namespace: str = ""  # "": --controller-namespace (M-02)
    cluster_secrets_label: str = "multicluster.runtime/cluster=true"
    cluster_secrets_key: str = "kubeconfig"
    local_cluster_name: str = "local"
    dynamic_concurrent_reconciles: int = 1
    rate_limiter_min_delay_s: float = 0.2
    rate_limiter_max_delay_s: float = 1000.0
    rate_limiter_rate_limit: int = 10
    rate_limiter_burst_limit: int = 100
    instance_requeue_interval_s: float = 3.0
    instance_requeue_max_interval_s: float = 300.0
    apply_concurrency: int = 20
    skip_unchanged: bool = True
    cel_cost_limit: int = 0
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
    log_level: str = "info"  # a standard library level name (see parse_log_level)
    log_encoder: str = "console"
    log_development: bool = False
    shards: str = "off"


_bool = parse_bool


# (flag, dest, type, default-from-ControllerConfig, help)
_FLAGS: tuple[tuple[str, str, object, str], ...] = (
    (
        "--metrics-bind-address",
        "metrics_bind_address",
        parse_bind_address,
        "Prometheus /metrics address; 0 turns metrics off",
    ),
    (
        "--health-probe-bind-address",
        "health_probe_bind_address",
        parse_bind_address,
        "/healthz and /readyz; 0 turns the probes off",
    ),
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
        _POSITIVE,
        "ResourceGraphDefinition workers",
    ),
    (
        "--graph-revision-concurrent-reconciles",
        "graph_revision_concurrent_reconciles",
        _POSITIVE,
        "GraphRevision workers",
    ),
    (
        "--graph-concurrent-reconciles",
        "graph_concurrent_reconciles",
        _POSITIVE,
        "Graph workers (GraphKind)",
    ),
    (
        "--controller-namespace",
        "controller_namespace",
        str,
        "namespace of kro's own ServiceAccount; required with GraphKind",
    ),
    (
        "--controller-service-account",
        "controller_service_account",
        str,
        "name of kro's own ServiceAccount, which no Graph may impersonate; required with GraphKind",
    ),
    (
        "--enable-multicluster",
        "enable_multicluster",
        _bool,
        "hub and spokes: install every RGD's CRD on the member clusters and reconcile their "
        "instances there (MultiCluster gate)",
    ),
    (
        "--cluster-secrets-namespace",
        "cluster_secrets_namespace",
        str,
        "namespace of the member clusters' kubeconfig Secrets; empty: --controller-namespace "
        "(MultiCluster gate)",
    ),
    (
        "--cluster-secrets-label",
        "cluster_secrets_label",
        parse_label_pair,
        "key=value label that makes a Secret a member cluster (MultiCluster gate)",
    ),
    (
        "--cluster-secrets-key",
        "cluster_secrets_key",
        str,
        "Secret data key holding a member cluster's kubeconfig (MultiCluster gate)",
    ),
    (
        "--local-cluster-name",
        "local_cluster_name",
        str,
        "the hub's own cluster name as a target (MultiCluster gate)",
    ),
    (
        "--dynamic-controller-concurrent-reconciles",
        "dynamic_concurrent_reconciles",
        _POSITIVE,
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
        _POSITIVE,
        "instance reconciles per second, overall",
    ),
    (
        "--dynamic-controller-rate-limiter-burst-limit",
        "rate_limiter_burst_limit",
        _POSITIVE,
        "instance reconciles allowed in a burst above the rate",
    ),
    (
        "--instance-requeue-interval",
        "instance_requeue_interval_s",
        parse_duration,
        "first delay of an instance that waits or fails, doubled per retry; 0 disables them",
    ),
    (
        "--instance-requeue-max-interval",
        "instance_requeue_max_interval_s",
        parse_duration,
        "cap of the doubling instance requeue delay (kro-py; upstream fixes it at 5m)",
    ),
    (
        "--apply-concurrency",
        "apply_concurrency",
        _apply_concurrency,
        "most server-side applies of one instance's pass in flight at once (0 or less: 20)",
    ),
    (
        "--skip-unchanged",
        "skip_unchanged",
        parse_bool,
        "skip reads and writes the memory of unchanged objects proves useless (false: redo "
        "every read and apply, for debugging; kro-py only)",
    ),
    (
        "--cel-cost-limit",
        "cel_cost_limit",
        _NATURAL,
        "most CEL runtime cost units one evaluation of an expression may use; over it the "
        "expression fails (0: no limit; kro-py's time and memory budgets apply regardless)",
    ),
    (
        "--dynamic-controller-default-resync-period",
        "resync_period_s",
        _NATURAL,
        "seconds between full re-lists of watched kinds",
    ),
    (
        "--dynamic-controller-default-queue-max-retries",
        "queue_max_retries",
        _NATURAL,
        "retries of a failing instance before it is dropped until its next change",
    ),
    ("--client-qps", "client_qps", _positive_number, "API server requests per second"),
    ("--client-burst", "client_burst", _POSITIVE, "API server requests in a burst"),
    (
        "--rgd-max-collection-size",
        "max_collection_size",
        _POSITIVE,
        "most items one forEach may expand to",
    ),
    (
        "--rgd-max-collection-dimension-size",
        "max_collection_dimension_size",
        _POSITIVE,
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
    (
        "--log-level",
        "log_level",
        parse_log_level,
        "debug, info, warn, error, dpanic, panic, fatal or a verbosity such as 2 "
        "(zap: --zap-log-level)",
    ),
    ("--log-encoder", "log_encoder", parse_log_encoder, "console or json (zap: --zap-encoder)"),
    ("--log-development", "log_development", _bool, "human-friendly logs (zap: --zap-devel)"),
    (
        "--shards",
        "shards",
        parse_shards,
        "off, or auto: replicas share the instances by namespace hash range (alpha; "
        "kube-apiserver ShardedListAndWatch, client-side filtering without it)",
    ),
)

_ALIASES = {
    "--log-level": ["--zap-log-level"],
    "--log-encoder": ["--zap-encoder"],
    "--log-development": ["--zap-devel"],
}


_METAVARS: Mapping[str, str] = {
    "--kubeconfig": "FILE",
    "--leader-election-namespace": "NAMESPACE",
    "--controller-namespace": "NAMESPACE",
    "--controller-service-account": "NAME",
    "--log-level": "LEVEL",
    "--log-encoder": "FORMAT",
    "--shards": "MODE",
}


def _metavar(flag: str, kind: object) -> str:
    """What the value looks like, not the flag's name again (which argparse would repeat)."""
    if flag.endswith("-address"):
        return "HOST:PORT"
    names: dict[object, str] = {
        parse_duration: "DURATION",
        _bool: "BOOL",
        _POSITIVE: "N",
        _NATURAL: "N",
        _positive_number: "N",
        int: "N",
        float: "N",
    }
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
        # Go booleans: the flag alone means true (`--leader-elect`), `=false` turns it off.
        optional = {"nargs": "?", "const": True} if kind is _bool else {}
        parser.add_argument(
            flag,
            *_ALIASES.get(flag, []),
            dest=dest,
            type=kind,  # type: ignore[arg-type]
            default=default,
            metavar=_metavar(flag, kind),
            help=f"{help_text} (default: {_shown(default, kind)})",
            **optional,  # type: ignore[arg-type]
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


class FlagParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (exit 2), as Go's flag errors are:
    the controller takes some thirty flags, and a usage block that long would bury the one
    line that says which value is wrong."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f'{self.prog}: {message} (see "{self.prog} --help")\n')


def controller_parser(prog: str = "kro controller") -> FlagParser:
    """The parser of `kro controller`: every flag, Go-style, with one-line usage errors."""
    parser = FlagParser(
        prog=prog,
        allow_abbrev=False,  # Go's flag package takes no abbreviations either
        description="Run the kro controller. Flags are spelled and defaulted as upstream "
        "kro's controller binary takes them, so the Helm chart's values work unchanged.",
    )
    add_controller_flags(parser)
    return parser


def missing_graph_kind_flags(args: argparse.Namespace) -> str | None:
    """What is missing for the GraphKind gate, as a usage error naming each missing flag; None
    when the gate is off or both flags are set."""
    if not args.feature_gates.get(FEATURE_GRAPH_KIND):
        return None
    missing = [flag for flag, dest in GRAPH_KIND_FLAGS.items() if not getattr(args, dest)]
    if not missing:
        return None
    verb = "is" if len(missing) == 1 else "are"
    return (
        f"{' and '.join(missing)} {verb} required when the {FEATURE_GRAPH_KIND} feature gate "
        "is on (kro refuses Graphs that would impersonate its own ServiceAccount)"
    )


def controller_args(argv: Sequence[str]) -> argparse.Namespace:
    """Parse `kro controller` arguments, including the checks across flags; a bad or missing
    flag exits with status 2 and one line on stderr."""
    parser = controller_parser()
    args = parser.parse_args(list(argv))
    problem = missing_graph_kind_flags(args) or multicluster_without_gate(args)
    if problem is not None:
        parser.error(problem)
    return args


def multicluster_without_gate(args: argparse.Namespace) -> str | None:
    """M-01: hub and spokes needs the MultiCluster gate; a usage error naming it otherwise."""
    if args.enable_multicluster and not args.feature_gates.get(FEATURE_MULTI_CLUSTER):
        return (
            f"--enable-multicluster requires the {FEATURE_MULTI_CLUSTER} feature gate "
            f"(--feature-gates={FEATURE_MULTI_CLUSTER}=true)"
        )
    return None


def parse_controller_args(argv: Sequence[str]) -> ControllerConfig:
    """Parse `kro controller` arguments (used by tests and by the command); a bad flag exits
    with status 2 and one line on stderr."""
    return config_from_args(controller_args(argv))
