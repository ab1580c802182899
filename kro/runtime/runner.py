"""kro.runtime.runner: run an operator from its set-up function (`kopf run`, ctrl.NewManager).

Every operator process does the same things around its controllers: logging, a connection
(kubeconfig or the in-cluster service account), a manager with probes, metrics, leader election
and signal handling, all configurable from flags and environment. The runner does them, so an
operator module is its set-up function:

    def setup(manager: Manager) -> None:          # or async def
        manager.controller("labeller").for_("ConfigMap").reconcile_objects(label)

    if __name__ == "__main__":
        run(setup)                                 # flags from sys.argv, defaults from env

or, with no `__main__` block at all, `python -m kro.runtime path/to/operator.py` (or
`package.module`, or `package.module:function`; the function defaults to `setup`).

`--help` lists every flag with its environment variable and default (kro.runtime.runflags
holds the table): the connection (`--kubeconfig`, `--context`), the scope (`--namespace`,
`WATCH_NAMESPACE`), the name, the probe and metrics addresses (`:8081` and `:8080` in a pod,
off elsewhere), leader election, the graceful-shutdown timeout, the client's rate limits and
logging.

SIGTERM and SIGINT stop the manager gracefully (a second one at once); a fatal error (a lost
Lease, a cache that never synced, a kind the server does not serve) exits 1 after logging it,
so the kubelet restarts the pod. The leader's identity is the pod's name (`POD_NAME`, else the
host name) plus a random suffix. From code, `await run_manager(setup, RunOptions(...))` does
the same without parsing anything and returns once the manager has stopped.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import importlib.util
import inspect
import os
import socket
import sys
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import structlog

from .client import Client, ClientOptions
from .config import SERVICE_ACCOUNT_DIR
from .leaderelection import LeaderElectionConfig
from .logging import configure
from .manager import Manager, ManagerOptions
from .runflags import parser

__all__ = ["RunOptions", "Setup", "load_setup", "main", "options_from", "run", "run_manager"]

log = structlog.get_logger(__name__)

Setup = Callable[[Manager], Awaitable[None] | None]
_UNNAMED = "kro-runtime"


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    """Everything the runner configures; `options_from(argv, environ)` builds one from flags."""

    name: str = "kro-runtime"
    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None
    health_probe_bind_address: str = "0"
    metrics_bind_address: str = "0"
    leader_elect: bool = False
    leader_election_id: str | None = None
    leader_election_namespace: str | None = None
    graceful_shutdown_timeout_s: float = 30.0
    qps: float = 50.0
    burst: int = 100
    log_format: str = "json"
    log_level: str = "info"

    def manager_options(self) -> ManagerOptions:
        election = None
        if self.leader_elect:
            pod = os.environ.get("POD_NAME") or socket.gethostname()
            election = LeaderElectionConfig(
                lease_name=self.leader_election_id or self.name,
                lease_namespace=self.leader_election_namespace or _pod_namespace(),
                identity=f"{pod}_{uuid.uuid4().hex[:8]}",
            )
        return ManagerOptions(
            health_probe_bind_address=self.health_probe_bind_address,
            metrics_bind_address=self.metrics_bind_address,
            leader_election=election,
            graceful_shutdown_timeout_s=self.graceful_shutdown_timeout_s,
            namespace=self.namespace,
            name=self.name,
        )


def _pod_namespace() -> str:
    """The namespace this pod runs in (the service account's), else `default`."""
    path = Path(SERVICE_ACCOUNT_DIR, "namespace")
    try:
        return path.read_text().strip() or "default"
    except OSError:
        return "default"


def options_from(
    argv: Sequence[str] | None = None, *, name: str = "kro-runtime", with_target: bool = False
) -> tuple[RunOptions, str | None]:
    """RunOptions from flags (`argv`, default sys.argv[1:]) over the environment; with
    `with_target`, also the positional operator to load."""
    args = parser(name, with_target=with_target, environ=os.environ).parse_args(argv)
    options = RunOptions(
        name=args.name,
        kubeconfig=args.kubeconfig,
        context=args.context,
        namespace=args.namespace,
        health_probe_bind_address=args.health_probe_bind_address,
        metrics_bind_address=args.metrics_bind_address,
        leader_elect=args.leader_elect,
        leader_election_id=args.leader_election_id,
        leader_election_namespace=args.leader_election_namespace,
        graceful_shutdown_timeout_s=args.graceful_shutdown_timeout,
        qps=args.qps,
        burst=args.burst,
        log_format=args.log_format,
        log_level="debug" if args.verbose else args.log_level,
    )
    return options, getattr(args, "target", None)


async def run_manager(setup: Setup, options: RunOptions, *, client: Client | None = None) -> None:
    """Connect (unless given `client`), build the manager, read discovery, call `setup`, run
    until stopped. Raises what the manager raises (kro.runtime.manager)."""
    own = client is None
    if client is None:
        client = await Client.from_kubeconfig(
            options.kubeconfig,
            context=options.context,
            options=ClientOptions(qps=options.qps, burst=options.burst, user_agent=options.name),
        )
    try:
        manager = Manager(options.manager_options(), client=client)
        await client.mapper.refresh()  # kinds named in setup resolve at once
        result = setup(manager)
        if inspect.isawaitable(result):
            await result
        log.info("runner.started", operator=options.name, namespace=options.namespace or "*")
        await manager.run()
    finally:
        if own:
            await client.close()


def run(setup: Setup, argv: Sequence[str] | None = None, *, name: str | None = None) -> None:
    """The operator's `main`: options from flags and environment, logging, then `run_manager`;
    exits 1 on a fatal error. `name` defaults to the set-up function's module."""
    options, _ = options_from(argv, name=name or _module_name(setup))
    _serve(setup, options)


def _serve(setup: Setup, options: RunOptions) -> None:
    configure("console" if options.log_format == "console" else "json", options.log_level)
    try:
        asyncio.run(run_manager(setup, options))
    except KeyboardInterrupt:  # a signal before the manager installed its handlers
        pass
    except Exception as e:
        log.error("runner.failed", operator=options.name, error=str(e), type=type(e).__name__)
        raise SystemExit(1) from e


def _module_name(setup: Callable[..., Any]) -> str:
    module = getattr(setup, "__module__", "") or ""
    if module == "__main__":
        module = Path(sys.argv[0]).stem
    return module.rpartition(".")[2].replace("_", "-") or "kro-runtime"


def load_setup(target: str) -> Setup:
    """`path/to/operator.py[:fn]`, `package.module[:fn]`: the set-up function (default `setup`)."""
    where, _, function = target.partition(":")
    module: ModuleType
    if where.endswith(".py") or os.sep in where:
        path = Path(where)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise SystemExit(f"cannot load {where}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    setup = getattr(module, function or "setup", None)
    if not callable(setup):
        raise SystemExit(f"{where} has no function {function or 'setup'}(manager)")
    return setup  # type: ignore[no-any-return]


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m kro.runtime TARGET [flags]`."""
    options, target = options_from(argv, name=_UNNAMED, with_target=True)
    assert target is not None
    setup = load_setup(target)
    if options.name == _UNNAMED:  # neither --name nor OPERATOR_NAME: the module's name
        options = dataclasses.replace(options, name=_module_name(setup))
    _serve(setup, options)
