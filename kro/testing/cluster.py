"""kro.testing.cluster: a real local Kubernetes control plane on 127.0.0.1.

Components, in start order: etcd -> kube-apiserver -> kube-controller-manager -> kube-scheduler
+ kwok (fake nodes that make Pods Running/Ready). Each gets a free loopback port, the cluster
gets fresh PKI and RBAC, and the harness waits for real readiness (/readyz, the `default`
namespace and ServiceAccount, a Ready node) instead of sleeping.

    python -m kro.testing.cluster up       # prints `export KUBECONFIG=...`
    python -m kro.testing.cluster status
    python -m kro.testing.cluster down

`up --members N` also starts N member control planes without nodes (kro.testing.fleet), each
under `<state dir>/members/<name>`, and registers them on the hub: one registry Secret each in
namespace kro-system (M-02). `status` and `down` cover the members too.

`up` detaches: the cluster keeps running until `down`. In-process users (the pytest plugin,
`make run`) use `LocalCluster` as a context manager and their children die with them.
`LocalCluster.restart(component)` stops one component and starts it again with the same flags,
ports and data (a crash-and-recover drill for clients: their URLs stay valid);
`stop(component)` and `start(component)` do the same in two steps, for an outage of a chosen
length (etcd away for 20 s while kube-apiserver keeps answering, with errors).

Starting says, on stderr, which component it starts and, at least every 10 s
(kro.testing.progress), which one it is still waiting for: a start on two busy cores can take
minutes, and `make run` must never look hung.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kro.testing import fleet, pki, processes, progress, testbin
from kro.testing.adminapi import AdminApi, ApiStatusError

_STAGES = Path(__file__).resolve().parent / "kwok-stages.yaml"
NODE_NAME = "kwok-node-0"
MEMBERS_DIR = "members"


def default_state_dir() -> Path:
    """Where `cluster up` keeps a detached cluster: $KRO_CLUSTER_DIR or ~/.cache/kro-cluster."""
    override = os.environ.get("KRO_CLUSTER_DIR")
    return Path(override) if override else Path.home() / ".cache" / "kro-cluster"


@dataclass(frozen=True, kw_only=True)
class ClusterOptions:
    """How to run a local cluster.

    nodes: start kube-scheduler and kwok with this many fake nodes (0: no Pods ever run).
    detached: children survive the harness (for `cluster up`); otherwise they die with it.
    start_timeout_s: generous, because two cores start kube-apiserver slowly.
    """

    nodes: int = 1
    detached: bool = False
    start_timeout_s: float = 180.0
    # kube-apiserver feature gates. ShardedListAndWatch (alpha in v1.36) lets a List/Watch carry
    # `shardSelector`; on by default because a request without the parameter is served exactly
    # as before, so nothing else changes. `()` runs kube-apiserver with its own defaults.
    feature_gates: tuple[tuple[str, bool], ...] = (("ShardedListAndWatch", True),)


def feature_gates_flag(gates: Sequence[tuple[str, bool]]) -> list[str]:
    """`--feature-gates=A=true,B=false`, or nothing when no gate is set."""
    if not gates:
        return []
    return ["--feature-gates=" + ",".join(f"{name}={str(on).lower()}" for name, on in gates)]


def parse_feature_gates(text: str) -> tuple[tuple[str, bool], ...]:
    """`A=true,B=false` (the kube-apiserver syntax) into pairs; `` or `none`: no gate."""
    if text.strip().lower() in ("", "none"):
        return ()
    pairs: list[tuple[str, bool]] = []
    for item in text.split(","):
        name, sep, value = item.strip().partition("=")
        if not sep or value.lower() not in ("true", "false") or not name:
            raise ValueError(f"feature gate {item!r} is not NAME=true|false")
        pairs.append((name, value.lower() == "true"))
    return tuple(pairs)


@dataclass(kw_only=True)
class ClusterState:
    """What is running, written to `<run_dir>/cluster.json` so `status`/`down` can find it."""

    run_dir: str
    server: str
    kubeconfig: str
    admin_token: str
    pids: dict[str, int] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    started_at: float = 0.0

    def bearer_kubeconfig(self) -> Path:
        """A kubeconfig for the same admin with the static bearer token instead of the client
        certificate: how a controller in a cluster authenticates (a ServiceAccount token,
        which kube-apiserver caches once verified), where a client certificate's chain is
        verified again on every request (a tenth of kube-apiserver's CPU under a benchmark's
        load). Written next to the other, anew each time: a run directory outlives its
        cluster, and the next one there has another port and token."""
        path = Path(self.run_dir) / "kubeconfig-bearer"
        ca = Path(self.run_dir) / "pki" / "ca.crt"
        return write_kubeconfig(path, self.server, ca, {"token": self.admin_token})

    def save(self) -> None:
        path = Path(self.run_dir) / "cluster.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2))
        tmp.replace(path)

    @classmethod
    def load(cls, run_dir: Path) -> ClusterState | None:
        try:
            return cls(**json.loads((run_dir / "cluster.json").read_text()))
        except (OSError, ValueError, TypeError):
            return None


class StartError(RuntimeError):
    """A component did not become ready; the message carries its log tail."""


def _say(message: str) -> None:
    print(f"[cluster] {message}", file=sys.stderr, flush=True)


def _b64(source: Path | bytes) -> str:
    return base64.b64encode(source if isinstance(source, bytes) else source.read_bytes()).decode()


def write_kubeconfig(path: Path, server: str, ca: Path | bytes, user: dict[str, str]) -> Path:
    """A kubeconfig with one cluster, one user and one context (JSON is valid YAML); `ca` is
    the CA certificate's file or its PEM bytes."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "kro-test",
                "cluster": {"server": server, "certificate-authority-data": _b64(ca)},
            }
        ],
        "users": [{"name": "user", "user": user}],
        "contexts": [
            {
                "name": "kro-test",
                "context": {"cluster": "kro-test", "user": "user", "namespace": "default"},
            }
        ],
        "current-context": "kro-test",
    }
    path.write_text(json.dumps(config, indent=2))
    path.chmod(0o600)
    return path


def _cert_user(pair: pki.KeyPair) -> dict[str, str]:
    return {"client-certificate-data": _b64(pair.cert), "client-key-data": _b64(pair.key)}


class LocalCluster:
    """One local control plane. Use `with LocalCluster(...) as state:` or start()/stop()."""

    def __init__(self, run_dir: Path | None = None, options: ClusterOptions | None = None) -> None:
        self.options = options or ClusterOptions()
        # A directory made here (etcd's data, the PKI with its keys, logs) is removed by stop();
        # one the caller names is the caller's, e.g. `cluster up`'s state directory.
        self._owns_run_dir = run_dir is None
        self.run_dir = run_dir or Path(tempfile.mkdtemp(prefix="kro-cluster-"))
        self._children: dict[str, subprocess.Popen[bytes]] = {}
        # What restart() needs: each component's command line and its readiness probes.
        self._argv: dict[str, list[str]] = {}
        self._probes: dict[str, list[Callable[[], object]]] = {}
        # PR_SET_PDEATHSIG fires when the *thread* that spawned a child ends, so children
        # spawned off the main thread (`await asyncio.to_thread(cluster.restart_apiserver)`)
        # are spawned by this one thread instead, which lives until stop().
        self._spawner: ThreadPoolExecutor | None = None
        self.state: ClusterState | None = None

    def __enter__(self) -> ClusterState:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- start -------------------------------------------------------------------------------

    def start(self, component: str | None = None, *, timeout_s: float = 120.0) -> ClusterState:
        """Start every component; retries once with new ports if one was taken meanwhile.

        With `component`: start again that one component, stopped by `stop(component)`, with
        its flags, ports and data directory, and return once its readiness probes pass (within
        `timeout_s`).
        """
        if component is not None:
            return self._start_component(component, timeout_s)
        started = time.monotonic()
        binaries = testbin.ensure(self._binary_names())
        for attempt in (1, 2):
            try:
                state = self._start_once(binaries)
            except StartError as error:
                self.stop()
                if attempt == 2:
                    raise
                reason = str(error).split("; last lines of")[0]
                _say(f"{reason}; starting again with new ports")
                continue
            _say(f"ready in {time.monotonic() - started:.1f}s: {state.server}")
            return state
        raise AssertionError("unreachable")

    def _binary_names(self) -> list[str]:
        names = ["etcd", "kube-apiserver", "kube-controller-manager", "kubectl"]
        if self.options.nodes:
            names += ["kube-scheduler", "kwok"]
        return names

    def _start_once(self, binaries: dict[str, Path]) -> ClusterState:
        run = self.run_dir
        for sub in ("etcd", "apiserver", "kcm", "scheduler"):
            shutil.rmtree(run / sub, ignore_errors=True)
        logs = run / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        certs = pki.generate(run / "pki")
        ports = {
            name: processes.free_port()
            for name in ("etcd", "etcd_peer", "apiserver", "kcm", "scheduler", "kwok")
        }
        server = f"https://127.0.0.1:{ports['apiserver']}"
        admin_token = base64.b32encode(os.urandom(20)).decode().lower()
        (run / "tokens.csv").write_text(f'{admin_token},kro-admin,kro-admin-uid,"system:masters"\n')
        self.state = state = ClusterState(
            run_dir=str(run),
            server=server,
            kubeconfig=str(
                write_kubeconfig(run / "kubeconfig", server, certs.ca.cert, _cert_user(certs.admin))
            ),
            admin_token=admin_token,
            ports=ports,
            started_at=time.time(),
        )
        deadline = time.monotonic() + self.options.start_timeout_s
        api = AdminApi(server, ca=certs.ca.cert, token=admin_token)

        self._launch(
            "etcd",
            self._etcd_argv(binaries["etcd"], ports),
            deadline,
            lambda: AdminApi.plain_get(f"http://127.0.0.1:{ports['etcd']}/health"),
        )
        self._launch(
            "kube-apiserver",
            self._apiserver_argv(binaries["kube-apiserver"], ports, certs),
            deadline,
            lambda: api.get("/readyz") is not None,
            lambda: api.exists("/api/v1/namespaces/default"),
        )
        kcm_config = write_kubeconfig(
            run / "kcm.kubeconfig", server, certs.ca.cert, _cert_user(certs.controller_manager)
        )
        self._launch(
            "kube-controller-manager",
            self._kcm_argv(binaries["kube-controller-manager"], ports, certs, kcm_config),
            deadline,
            lambda: AdminApi.insecure_get(f"https://127.0.0.1:{ports['kcm']}/healthz"),
        )
        if self.options.nodes:
            self._start_nodes(binaries, ports, certs, api, deadline)
        self._wait(
            "kube-controller-manager",
            deadline,
            lambda: api.exists("/api/v1/namespaces/default/serviceaccounts/default"),
        )
        state.save()
        return state

    def _start_nodes(
        self,
        binaries: dict[str, Path],
        ports: dict[str, int],
        certs: pki.ClusterPKI,
        api: AdminApi,
        deadline: float,
    ) -> None:
        run = self.run_dir
        assert self.state is not None
        sched_config = write_kubeconfig(
            run / "scheduler.kubeconfig",
            self.state.server,
            certs.ca.cert,
            _cert_user(certs.scheduler),
        )
        (run / "scheduler").mkdir(exist_ok=True)
        (run / "scheduler.yaml").write_text(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
            f"clientConnection: {{kubeconfig: {sched_config}}}\n"
            "leaderElection: {leaderElect: false}\n"
        )
        _say(f"starting kube-scheduler and kwok ({self.options.nodes} fake node(s))")
        self._spawn(
            "kube-scheduler",
            [
                str(binaries["kube-scheduler"]),
                f"--config={run / 'scheduler.yaml'}",
                "--bind-address=127.0.0.1",
                f"--secure-port={ports['scheduler']}",
                f"--cert-dir={run / 'scheduler'}",
                "--authorization-always-allow-paths=/healthz,/readyz,/livez",
                "--v=1",
            ],
        )
        self._spawn(
            "kwok",
            [
                str(binaries["kwok"]),
                f"--kubeconfig={self.state.kubeconfig}",
                f"--config={_STAGES}",
                "--manage-all-nodes=true",
                "--node-ip=127.0.0.1",
                "--cidr=198.51.100.0/24",
                "--node-lease-duration-seconds=40",
                f"--server-address=127.0.0.1:{ports['kwok']}",
            ],
        )
        for index in range(self.options.nodes):
            name = f"kwok-node-{index}"
            api.ensure("/api/v1/nodes", _node(name))
        self._probes["kube-scheduler"] = [
            lambda: AdminApi.insecure_get(f"https://127.0.0.1:{ports['scheduler']}/healthz")
        ]
        self._probes["kwok"] = [lambda: _node_ready(api, NODE_NAME)]
        for name in ("kube-scheduler", "kwok"):
            for probe in self._probes[name]:
                self._wait(name, deadline, probe)

    def _etcd_argv(self, binary: Path, ports: dict[str, int]) -> list[str]:
        client = f"http://127.0.0.1:{ports['etcd']}"
        peer = f"http://127.0.0.1:{ports['etcd_peer']}"
        return [
            str(binary),
            "--name=kro-test",
            f"--data-dir={self.run_dir / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=kro-test={peer}",
            "--unsafe-no-fsync=true",
            "--auto-compaction-retention=1",
            "--log-level=warn",
        ]

    def _apiserver_argv(
        self, binary: Path, ports: dict[str, int], certs: pki.ClusterPKI
    ) -> list[str]:
        run = self.run_dir
        return [
            str(binary),
            f"--etcd-servers=http://127.0.0.1:{ports['etcd']}",
            "--bind-address=127.0.0.1",
            f"--secure-port={ports['apiserver']}",
            "--advertise-address=127.0.0.1",
            "--endpoint-reconciler-type=none",
            f"--tls-cert-file={certs.apiserver.cert}",
            f"--tls-private-key-file={certs.apiserver.key}",
            f"--cert-dir={run / 'apiserver'}",
            f"--client-ca-file={certs.ca.cert}",
            f"--token-auth-file={run / 'tokens.csv'}",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={certs.service_account_key}",
            f"--service-account-signing-key-file={certs.service_account_key}",
            "--authorization-mode=RBAC",
            "--service-cluster-ip-range=10.0.0.0/16",
            "--allow-privileged=true",
            "--enable-priority-and-fairness=false",
            "--max-requests-inflight=800",
            "--max-mutating-requests-inflight=400",
            "--profiling=false",
            *feature_gates_flag(self.options.feature_gates),
            "--v=1",
        ]

    def _kcm_argv(
        self, binary: Path, ports: dict[str, int], certs: pki.ClusterPKI, kubeconfig: Path
    ) -> list[str]:
        return [
            str(binary),
            f"--kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={ports['kcm']}",
            f"--cert-dir={self.run_dir / 'kcm'}",
            "--leader-elect=false",
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={certs.service_account_key}",
            f"--root-ca-file={certs.ca.cert}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez",
            "--controllers=*",
            "--v=1",
        ]

    def _launch(
        self, name: str, argv: list[str], deadline: float, *probes: Callable[[], object]
    ) -> None:
        """Spawn a component and wait until every probe passes, in order."""
        self._probes[name] = list(probes)
        _say(f"starting {name}")
        self._spawn(name, argv)
        for probe in probes:
            self._wait(name, deadline, probe)

    def _spawn(self, name: str, argv: list[str]) -> None:
        log_dir = self.run_dir / "logs"
        detached = self.options.detached
        if detached or threading.current_thread() is threading.main_thread():
            child = processes.start(name, argv, log_dir, detached=detached)
        else:
            if self._spawner is None:
                self._spawner = ThreadPoolExecutor(1, thread_name_prefix="kro-cluster-spawner")
            child = self._spawner.submit(processes.start, name, argv, log_dir).result()
        self._children[name] = child
        self._argv[name] = argv
        assert self.state is not None
        self.state.pids[name] = child.pid
        self.state.save()

    def _wait(self, name: str, deadline: float, probe: Callable[[], object]) -> None:
        """Poll `probe` every 100 ms until it is true; fail fast when the component died.
        Says which component it waits for every progress interval."""
        ticker = progress.Ticker()
        while True:
            child = self._children.get(name)
            if child is not None and child.poll() is not None:
                raise StartError(self._failure(name, f"exited with {child.returncode}"))
            try:
                if probe():
                    return
            except (OSError, ApiStatusError):
                pass
            if time.monotonic() > deadline:
                raise StartError(self._failure(name, "did not become ready in time"))
            if ticker.due():
                left = progress.format_duration(deadline - time.monotonic())
                _say(
                    f"still waiting for {name} to become ready: "
                    f"{progress.format_duration(ticker.elapsed_s())} so far, {left} left; "
                    f"its log: {self.run_dir / 'logs' / f'{name}.log'}"
                )
            time.sleep(0.1)

    def _failure(self, name: str, what: str) -> str:
        log = self.run_dir / "logs" / f"{name}.log"
        return f"{name} {what}; last lines of {log}:\n{processes.log_tail(log)}"

    # -- restart -----------------------------------------------------------------------------

    def restart(
        self,
        component: str,
        *,
        kill: bool = False,
        grace_s: float = 10.0,
        timeout_s: float = 120.0,
    ) -> float:
        """Stop `component` and start it again with the same flags, ports and data directory;
        returns once its readiness probes pass again, with the seconds it was away.

        kill: SIGKILL at once (a crash); otherwise SIGTERM, and SIGKILL after `grace_s` (a
        rolling restart; kube-apiserver stops listening at once but may take long to exit).
        Only components this LocalCluster started can be restarted (not a detached `up`).
        """
        began = time.monotonic()
        self.stop(component, kill=kill, grace_s=grace_s)
        self._start_component(component, timeout_s)
        return time.monotonic() - began

    def restart_apiserver(self, *, kill: bool = False, grace_s: float = 10.0) -> float:
        """`restart("kube-apiserver")`: watches break and its watch cache starts afresh."""
        return self.restart("kube-apiserver", kill=kill, grace_s=grace_s)

    # -- stop --------------------------------------------------------------------------------

    def _stop_component(self, component: str, *, kill: bool, grace_s: float) -> None:
        child = self._children.get(component)
        if child is None or component not in self._argv:
            raise ValueError(f"{component!r} is not running in this cluster: {self._running()}")
        if kill:
            with contextlib.suppress(ProcessLookupError):
                child.kill()
            child.wait(timeout=30)
        else:
            processes.stop_pid(child.pid, timeout_s=grace_s, reap=child.poll)
        # Forget the pid at once: stop() must never signal a number the kernel may reuse.
        del self._children[component]
        if self.state is not None:
            self.state.pids.pop(component, None)
            self.state.save()

    def _start_component(self, component: str, timeout_s: float) -> ClusterState:
        if component not in self._argv:
            raise ValueError(f"{component!r} was never started in this cluster: {self._running()}")
        child = self._children.get(component)
        if child is not None and child.poll() is None:
            raise ValueError(f"{component!r} is already running")
        assert self.state is not None
        self._spawn(component, self._argv[component])
        deadline = time.monotonic() + timeout_s
        for probe in self._probes.get(component, ()):
            self._wait(component, deadline, probe)
        return self.state

    def _running(self) -> list[str]:
        return sorted(self._children)

    def stop(
        self, component: str | None = None, *, kill: bool = False, grace_s: float = 10.0
    ) -> None:
        """Stop components in reverse start order; safe to call twice.

        With `component`: stop only that one (SIGTERM, SIGKILL after `grace_s`; at once with
        `kill`), keeping its flags, ports and data for `start(component)`. The rest of the
        cluster keeps running: stopping etcd leaves kube-apiserver up, answering with errors.
        """
        if component is not None:
            self._stop_component(component, kill=kill, grace_s=grace_s)
            return
        pids = (
            dict(self.state.pids) if self.state else {n: c.pid for n, c in self._children.items()}
        )
        # In reverse order of first start, also for a component started again since.
        first_start = {name: index for index, name in enumerate(self._argv)}
        for name in sorted(pids, key=lambda n: first_start.get(n, len(first_start)), reverse=True):
            child = self._children.get(name)
            processes.stop_pid(pids[name], reap=child.poll if child else None)
        self._children.clear()
        if self._spawner is not None:
            self._spawner.shutdown()
            self._spawner = None
        if self._owns_run_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)
        elif self.state is not None:
            self.state.pids.clear()
            self.state.save()


def _node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
            },
        },
    }


def _node_ready(api: AdminApi, name: str) -> bool:
    node = api.get(f"/api/v1/nodes/{name}")
    conditions = (node or {}).get("status", {}).get("conditions", [])
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def member_dirs(run_dir: Path) -> list[Path]:
    """The run directories of the members `up --members` started under `run_dir`."""
    return sorted(path.parent for path in (run_dir / MEMBERS_DIR).glob("*/cluster.json"))


def _alive(run_dir: Path) -> bool:
    state = ClusterState.load(run_dir)
    return state is not None and any(processes.is_alive(p) for p in state.pids.values())


def stop_detached(run_dir: Path) -> bool:
    """Stop a cluster started by `up`; True when something was running."""
    state = ClusterState.load(run_dir)
    if state is None:
        return False
    alive = [pid for pid in state.pids.values() if processes.is_alive(pid)]
    for name in reversed(list(state.pids)):
        processes.stop_pid(state.pids[name])
    state.pids.clear()
    state.save()
    return bool(alive)


def describe(run_dir: Path) -> str:
    """What `status` prints: each component, its pid and whether it is alive; then the same
    for each member `up --members` started that has not been stopped."""
    state = ClusterState.load(run_dir)
    if state is None or not state.pids:
        lines = [f"no cluster running in {run_dir}"]
    else:
        lines = [f"cluster in {run_dir}: {state.server}", f"export KUBECONFIG={state.kubeconfig}"]
        for name, pid in state.pids.items():
            lines.append(
                f"  {name:<24} pid {pid:<8} {'running' if processes.is_alive(pid) else 'gone'}"
            )
    for member in member_dirs(run_dir):
        member_state = ClusterState.load(member)
        if member_state is not None and member_state.pids:
            lines.append(f"member {member.name}: {describe(member)}")
            kubeconfig = member / fleet.KUBECONFIG_FILE
            if kubeconfig.exists():
                lines.append(f"  inline kubeconfig (its registry Secret's): {kubeconfig}")
    return "\n".join(lines)


def _up_members(run_dir: Path, hub: ClusterState, count: int, options: ClusterOptions) -> int:
    """Start `count` detached members and register them on the hub (kro-system); on a failure
    stop everything `up` started, hub included, as if `up` had never run."""
    clusters = {
        name: LocalCluster(run_dir / MEMBERS_DIR / name, options)
        for name in fleet.member_names(count)
    }
    for cluster in clusters.values():
        cluster.run_dir.mkdir(parents=True)
    try:
        members = fleet.start_members(clusters)
        admin = AdminApi.from_kubeconfig(Path(hub.kubeconfig))
        fleet.Fleet(admin, members).register()
    except (StartError, ApiStatusError, OSError) as error:
        print(str(error), file=sys.stderr)
        for cluster in clusters.values():
            cluster.stop()
        stop_detached(run_dir)
        return 1
    for member in members:
        _say(f"{member.name}: {member.server}, KUBECONFIG={member.kubeconfig_path}")
    _say(f"registry Secrets {[m.name for m in members]} in namespace {fleet.DEFAULT_NAMESPACE}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kro.testing.cluster",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    where = "state directory (default: $KRO_CLUSTER_DIR, else ~/.cache/kro-cluster)"
    parser.add_argument("--dir", type=Path, default=None, help=where)
    # Also after the subcommand (`up --dir X`), where people write it: SUPPRESS keeps a
    # subcommand without it from resetting a --dir given before.
    after = argparse.ArgumentParser(add_help=False)
    after.add_argument("--dir", type=Path, default=argparse.SUPPRESS, help=where)
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser(
        "up", parents=[after], help="start a detached cluster and print its KUBECONFIG"
    )
    up.add_argument("--nodes", type=int, default=1, help="fake nodes (0: no scheduler, no kwok)")
    up.add_argument(
        "--feature-gates",
        type=parse_feature_gates,
        default=ClusterOptions().feature_gates,
        help="kube-apiserver feature gates, NAME=true|false,... ('none': the server defaults; "
        "default: ShardedListAndWatch=true)",
    )
    up.add_argument(
        "--members",
        type=int,
        default=0,
        help="also start this many member control planes (no nodes) and register each on the "
        "hub with a registry Secret in kro-system (default: 0)",
    )
    sub.add_parser("down", parents=[after], help="stop the detached cluster and its members")
    sub.add_parser("status", parents=[after], help="say what is running")
    args = parser.parse_args(argv)
    run_dir: Path = args.dir or default_state_dir()
    if args.command == "up":
        if args.members < 0:
            parser.error("--members must be 0 or more")
        if _alive(run_dir) or any(_alive(member) for member in member_dirs(run_dir)):
            print(describe(run_dir))
            print("a cluster is already running; `down` stops it", file=sys.stderr)
            return 1
        run_dir.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(run_dir / MEMBERS_DIR, ignore_errors=True)  # a stopped fleet's leftovers
        cluster = LocalCluster(
            run_dir,
            ClusterOptions(nodes=args.nodes, detached=True, feature_gates=args.feature_gates),
        )
        try:
            state = cluster.start()
        except StartError as error:
            print(str(error), file=sys.stderr)
            return 1
        if args.members:
            member_options = ClusterOptions(
                nodes=0, detached=True, feature_gates=args.feature_gates
            )
            if _up_members(run_dir, state, args.members, member_options):
                return 1
        print(f"export KUBECONFIG={state.kubeconfig}")
        return 0
    if args.command == "down":
        # Members first: the hub's registry names them, never the other way round.
        stopped = [stop_detached(member) for member in member_dirs(run_dir)]
        stopped.append(stop_detached(run_dir))
        print("stopped" if any(stopped) else f"no cluster running in {run_dir}")
        return 0
    print(describe(run_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
