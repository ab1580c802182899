"""kro.runtime.runflags: the runner's flags, each with its environment variable and default.

An operator runs in a pod, where settings come from the Deployment's `env`, and on a laptop,
where they come from flags; each setting is both, and `--help` must say so, or an operator's
user has to read this module to find out that `WATCH_NAMESPACE` exists. So every flag is one
`Flag` row (names, variable, default, description), and the parser and its help are built from
the table: a flag cannot be added without saying where else it is read from and what it is when
unset.

Defaults that depend on where the process runs: inside a pod (the kubelet sets
`KUBERNETES_SERVICE_HOST` in every container, and the in-cluster connection reads it too) the
probe and metrics servers listen on `:8081` and `:8080`, so liveness and readiness probes and a
scrape config work without flags; anywhere else both are off (`0`), so a developer's second
operator never collides with the first. `Manager` itself binds nothing unless told: that
default is the runner's, the program's main, never a library's.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["FLAGS", "Flag", "in_a_pod", "parser"]

IN_POD_PROBES: Final = ":8081"  # kubebuilder's conventions
IN_POD_METRICS: Final = ":8080"


def in_a_pod(environ: Mapping[str, str]) -> bool:
    """Whether this process runs in a Kubernetes pod (what the in-cluster config needs too)."""
    return bool(environ.get("KUBERNETES_SERVICE_HOST"))


def truthy(value: str | None) -> bool:
    """An environment variable meant as a boolean (`true`, `1`, `yes`, `on`)."""
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True, slots=True)
class Flag:
    """One setting: its flags, the variable it falls back to, its default when neither is set.

    default: the value (a callable gets `(environ, name)`: the operator's name, the terminal),
    shown: how `--help` describes the default when the value alone would not say it.
    """

    names: tuple[str, ...]
    help: str
    env: str | None = None
    default: Any = None
    shown: str | None = None
    kind: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    switch: bool = False  # a flag without a value (store_true)
    metavar: str | None = None

    def value(self, environ: Mapping[str, str], name: str) -> Any:
        """The default argparse gets: the variable's value if set, else the default."""
        raw = environ.get(self.env) if self.env else None
        if raw:
            return truthy(raw) if self.switch else (self.kind or str)(raw)
        return self.default(environ, name) if callable(self.default) else self.default

    def describe(self, environ: Mapping[str, str], name: str) -> str:
        """The help line: what it does, its variable, its default, and the variable's value if
        set (so `--help` in a pod shows what the Deployment configured)."""
        if self.shown is not None:
            default = self.shown
        elif self.switch:
            default = "off"
        else:
            current = self.value({}, name)
            default = "unset" if current is None else str(current)
        parts = [f"env {self.env}" if self.env else "no variable", f"default: {default}"]
        if self.env and environ.get(self.env):
            parts.append(f"now: {self.env}={environ[self.env]}")
        return f"{self.help} ({'; '.join(parts)})"


def _probes(environ: Mapping[str, str], _name: str) -> str:
    return IN_POD_PROBES if in_a_pod(environ) else "0"


def _metrics(environ: Mapping[str, str], _name: str) -> str:
    return IN_POD_METRICS if in_a_pod(environ) else "0"


def _log_format(_environ: Mapping[str, str], _name: str) -> str:
    return "console" if sys.stderr.isatty() else "json"


FLAGS: Final[tuple[Flag, ...]] = (
    Flag(
        ("--kubeconfig",),
        "the kubeconfig file to connect with",
        env="KUBECONFIG",
        shown="~/.kube/config if it exists, else the pod's service account",
        metavar="PATH",
    ),
    Flag(("--context",), "the kubeconfig context to use", shown="the current context"),
    Flag(
        ("-n", "--namespace"),
        "watch and reconcile this namespace only",
        env="WATCH_NAMESPACE",
        shown="every namespace",
    ),
    Flag(
        ("--name",),
        "the operator's name: its field manager, user agent and Lease name",
        env="OPERATOR_NAME",
        default=lambda _environ, name: name,
        shown="the module's name, secret_replicator -> secret-replicator",
    ),
    Flag(
        ("--health-probe-bind-address",),
        "host:port for /healthz and /readyz, or 0 for none",
        env="HEALTH_PROBE_BIND_ADDRESS",
        default=_probes,
        shown=f"{IN_POD_PROBES} in a pod, else 0",
        metavar="ADDRESS",
    ),
    Flag(
        ("--metrics-bind-address",),
        "host:port for /metrics, or 0 for none",
        env="METRICS_BIND_ADDRESS",
        default=_metrics,
        shown=f"{IN_POD_METRICS} in a pod, else 0",
        metavar="ADDRESS",
    ),
    Flag(
        ("--leader-elect",),
        "reconcile only while holding a Lease, so replicas can stand by",
        env="LEADER_ELECT",
        default=False,
        switch=True,
    ),
    Flag(
        ("--leader-election-id",),
        "the Lease's name",
        env="LEADER_ELECTION_ID",
        metavar="NAME",
        shown="the operator's name",
    ),
    Flag(
        ("--leader-election-namespace",),
        "the Lease's namespace",
        env="POD_NAMESPACE",
        metavar="NAMESPACE",
        shown="the pod's namespace, else default",
    ),
    Flag(
        ("--graceful-shutdown-timeout",),
        "seconds queued reconciles may take to finish on SIGTERM",
        env="GRACEFUL_SHUTDOWN_TIMEOUT",
        default=30.0,
        kind=float,
        metavar="SECONDS",
    ),
    Flag(
        ("--qps",),
        "requests per second to the API server (0: unthrottled)",
        env="KUBE_QPS",
        default=50.0,
        kind=float,
    ),
    Flag(
        ("--burst",),
        "requests allowed above --qps in a burst",
        env="KUBE_BURST",
        default=100,
        kind=int,
    ),
    Flag(
        ("--log-format",),
        "how log lines look",
        env="LOG_FORMAT",
        default=_log_format,
        shown="console on a terminal, else json",
        choices=("json", "console"),
    ),
    Flag(
        ("--log-level",),
        "the least severe level logged: debug, info, warning or error",
        env="LOG_LEVEL",
        metavar="LEVEL",
        default="info",
    ),
    Flag(("-v", "--verbose"), "the same as --log-level=debug", switch=True, default=False),
)


def parser(name: str, *, with_target: bool, environ: Mapping[str, str]) -> argparse.ArgumentParser:
    """The runner's parser; each flag's default is its variable's value, else `Flag.default`."""
    result = argparse.ArgumentParser(
        prog="python -m kro.runtime" if with_target else None,
        description="Run a kro.runtime operator. Every flag falls back to an environment "
        "variable, then to a default; both are given with each flag below.",
        epilog="Also read from the environment: POD_NAME (the leader's identity and the "
        "Events' reporting instance; else the host name) and KUBERNETES_SERVICE_HOST (set in "
        "every pod: the in-cluster connection, and the probe and metrics defaults above).",
    )
    if with_target:
        result.add_argument(
            "target", help="the operator: operator.py, package.module or package.module:setup"
        )
    for flag in FLAGS:
        options: dict[str, Any] = {
            "default": flag.value(environ, name),
            "help": flag.describe(environ, name),
        }
        if flag.switch:
            options["action"] = "store_true"
        else:
            options["metavar"] = flag.metavar or flag.names[-1].lstrip("-").upper()
            if flag.kind is not None:
                options["type"] = flag.kind
            if flag.choices is not None:
                options["choices"] = flag.choices
                options.pop("metavar")
        result.add_argument(*flag.names, **options)
    return result
