"""--scenario graph-decorator: one Graph decorating `--namespaces` labelled Namespaces with a
default-deny NetworkPolicy each (a `ref` by selector over Namespaces, a `template` with
`forEach` over it, applied as an impersonated ServiceAccount), created after the Namespaces;
then `--more-namespaces` labelled at once; then the Graph deleted. Per phase: time until every
policy exists and until the Graph is Ready, API requests per Namespace, controller CPU, the
longest the controller left a scrape unanswered. With --restart, the controller is restarted
once the first Graph converged, and the writes that reach its NetworkPolicies until the new
controller is quiet are counted (the rest of the run goes on with the new controller).
Results go to bench/results/controller-graph-decorator-<N>ns[-restart].json."""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any

from kro.runtime.client import Client
from kro.runtime.gvk import GVR

from ..graphs import (
    GRAPHS,
    SERVICE_ACCOUNTS,
    Decorated,
    create_namespaces,
    follow,
    label_namespaces,
    namespaces_furnished,
)
from ..harness import (
    SETTINGS,
    admin_client,
    control_plane_cpu,
    cpu_between,
    install_kro_crds,
    load_average,
    on_cluster,
    per_instance,
    requests_by_verb,
    write_result,
)
from ..process import Controller, Responsiveness

POLICIES = GVR("networking.k8s.io", "v1", "networkpolicies")
CLUSTER_ROLES = GVR("rbac.authorization.k8s.io", "v1", "clusterroles")
CLUSTER_ROLE_BINDINGS = GVR("rbac.authorization.k8s.io", "v1", "clusterrolebindings")
DECORATE_LABEL = "bench.kro.run/decorate"
DECORATOR = "baseline"
"""The Graph's name, its ServiceAccount's, and the ClusterRole's (prefixed with the run's tag)."""
GRAPH_GATE = (
    "--feature-gates=GraphKind=true",
    "--controller-namespace=kro-system",
    "--controller-service-account=kro",
)
"""The Graph controller's gate and the two flags it requires (kro's own ServiceAccount, which no
Graph may apply as; the bench's Graph applies as its own ServiceAccount, never that one)."""
POLICY_SELECTOR = "kro.run/node-id=policies"
WRITE_VERBS = ("CREATE", "UPDATE", "PATCH", "APPLY")
"""kube-apiserver's verbs (apiserver_request_total) for a write to an object: a server-side
apply is APPLY, and counts even when it changes nothing."""
READ_VERBS = ("GET", "LIST", "WATCH")


def decorator_graph(namespace: str) -> dict[str, Any]:
    """Every Namespace labelled DECORATE_LABEL=on gets a default-deny NetworkPolicy: a `ref` by
    selector over Namespaces (a list), and a `template` with one row per listed Namespace."""
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "Graph",
        "metadata": {"name": DECORATOR, "namespace": namespace},
        "spec": {
            "serviceAccountName": DECORATOR,
            "nodes": [
                {
                    "id": "targets",
                    "ref": {
                        "apiVersion": "v1",
                        "kind": "Namespace",
                        "metadata": {"selector": {"matchLabels": {DECORATE_LABEL: "on"}}},
                    },
                },
                {
                    "id": "policies",
                    "forEach": [{"target": "${targets}"}],
                    "template": {
                        "apiVersion": "networking.k8s.io/v1",
                        "kind": "NetworkPolicy",
                        "metadata": {
                            "name": "baseline-deny",
                            "namespace": "${target.metadata.name}",
                        },
                        "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
                    },
                },
            ],
        },
    }


def decorator_applier(namespace: str, tag: str) -> list[tuple[GVR, dict[str, Any], str | None]]:
    """The ServiceAccount the Graph applies as, with only what its nodes need: read Namespaces,
    write NetworkPolicies in any namespace. kro itself keeps its own (admin) identity for the
    watches and the Graph's status; every read and write of the Graph's nodes is impersonated."""
    role = f"{tag}-{DECORATOR}"
    writes = ["get", "list", "watch", "create", "update", "patch", "delete"]
    return [
        (SERVICE_ACCOUNTS, {"metadata": {"name": DECORATOR}}, namespace),
        (
            CLUSTER_ROLES,
            {
                "metadata": {"name": role},
                "rules": [
                    {"apiGroups": [""], "resources": ["namespaces"], "verbs": writes[:3]},
                    {
                        "apiGroups": ["networking.k8s.io"],
                        "resources": ["networkpolicies"],
                        "verbs": writes,
                    },
                ],
            },
            None,
        ),
        (
            CLUSTER_ROLE_BINDINGS,
            {
                "metadata": {"name": role},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role,
                },
                "subjects": [{"kind": "ServiceAccount", "name": DECORATOR, "namespace": namespace}],
            },
            None,
        ),
    ]


async def _decorator_phase(
    client: Client,
    controller: Controller,
    seen: Decorated,
    *,
    act: Awaitable[Any],
    wanted: Sequence[str],
    total: int,
    timeout_s: float,
) -> dict[str, Any]:
    """Run `act` (create the Graph, or label Namespaces), then time until a policy exists in
    every namespace of `wanted` and until the Graph reports Ready over `total` objects; count
    the API server's requests, and the controller's, until the controller has been quiet 3 s."""
    by_verb_before = await requests_by_verb(client)
    controller_before = controller.requests()
    cpu_before, _ = controller.usage()
    plane_before = control_plane_cpu()
    probe = Responsiveness(controller.port)
    probing = asyncio.create_task(probe.run())
    started = time.monotonic()
    await act
    policies_at = await seen.until(lambda: all(ns in seen.policies for ns in wanted), timeout_s)
    graph_at = await seen.until(lambda: seen.graph_converged(total), timeout_s)
    quiet_from = time.monotonic()
    settled_s = quiet_from + await controller.quiet_patient(3.0, 600.0) - started
    probing.cancel()
    await asyncio.gather(probing, return_exceptions=True)
    by_verb_after = await requests_by_verb(client)
    cpu_after, peak = controller.usage()
    n = len(wanted)
    api = sum(by_verb_after.values()) - sum(by_verb_before.values())
    return {
        "namespaces": n,
        "policies_s": policies_at - started if policies_at else None,
        "policies_found": sum(ns in seen.policies for ns in wanted),
        "graph_ready_s": graph_at - started if graph_at else None,
        "settled_s": settled_s,
        "controller_longest_unresponsive_s": probe.slowest_s,
        "policies_labelled_with_final_size": sum(v == str(total) for v in seen.sizes.values()),
        "api_requests": api,
        "api_requests_per_namespace": api / n,
        "api_requests_per_namespace_by_verb": per_instance(by_verb_before, by_verb_after, n),
        "controller_requests_per_namespace": (controller.requests() - controller_before) / n,
        "controller_cpu_s": cpu_after - cpu_before,
        "controller_peak_rss_mib": peak / 2**20,
        "control_plane_cpu_s": cpu_between(plane_before, control_plane_cpu()),
    }


def policy_writes(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """kube-apiserver's requests on networkpolicies between two scrapes that were not reads
    (requests_by_verb's "VERB resource" keys), by verb."""
    found: dict[str, float] = {}
    for key, count in after.items():
        verb, _, resource = key.partition(" ")
        delta = count - before.get(key, 0.0)
        if resource == POLICIES.resource and verb not in READ_VERBS and delta:
            found[verb] = delta
    return found


async def _restart_phase(
    client: Client,
    old: Controller,
    kubeconfig: str,
    workers: int,
    seen: Decorated,
    *,
    namespaces: int,
) -> tuple[Controller, dict[str, Any]]:
    """Stop the controller over the converged Graph and start another with the same flags;
    until the new one has made no request for 5 s, count the writes that reach the Graph's
    NetworkPolicies: kube-apiserver's create, update, patch and apply requests on them (an
    apply that changes nothing is still a request the API server serves), and how many changed
    one (MODIFIED events). A controller that remembers nothing across the restart proves each
    policy unchanged or re-applies it; the target is 0 writes. Returns the new controller."""
    by_verb_before = await requests_by_verb(client)
    modified_before = seen.modified
    plane_before = control_plane_cpu()
    old.stop()
    started = time.monotonic()
    controller = Controller.start(kubeconfig, workers, extra_args=GRAPH_GATE)
    try:
        await controller.wait_up(0.1)
        up_s = time.monotonic() - started
        probe = Responsiveness(controller.port)
        probing = asyncio.create_task(probe.run())
        settled_s = up_s + await controller.quiet_patient(5.0, 600.0)
        probing.cancel()
        await asyncio.gather(probing, return_exceptions=True)
    except BaseException:
        controller.stop()  # the caller still holds the old one, and stops only that
        raise
    by_verb_after = await requests_by_verb(client)
    writes = policy_writes(by_verb_before, by_verb_after)
    by_method = controller.requests_by_method()
    cpu, peak = controller.usage()
    api = sum(by_verb_after.values()) - sum(by_verb_before.values())
    return controller, {
        "namespaces": namespaces,
        "up_s": up_s,
        "settled_s": settled_s,
        "networkpolicy_writes": sum(writes.get(verb, 0.0) for verb in WRITE_VERBS),
        "networkpolicy_writes_by_verb": writes,
        "networkpolicies_changed": seen.modified - modified_before,
        "graph_still_converged": seen.graph_converged(namespaces),
        "controller_longest_unresponsive_s": probe.slowest_s,
        "api_requests": api,
        "api_requests_per_namespace": api / namespaces,
        # Counts, not per Namespace: a restart's few requests would round away over hundreds.
        "api_requests_by_verb": per_instance(by_verb_before, by_verb_after, 1),
        "controller_requests_by_method": by_method,
        "controller_writes": sum(v for k, v in by_method.items() if k != "GET"),
        "controller_cpu_s": cpu,
        "controller_peak_rss_mib": peak / 2**20,
        "control_plane_cpu_s": cpu_between(plane_before, control_plane_cpu()),
    }


async def run_graph_decorator(
    kubeconfig: str,
    namespaces: int,
    more: int,
    workers: int,
    *,
    restart: bool = False,
    profile: str | None = None,
    timeout_s: float = 1800.0,
) -> dict[str, Any]:
    """One Graph decorating `namespaces` labelled Namespaces with a NetworkPolicy each (created
    after the Namespaces), with `restart` a restart of the controller once it converged, then
    `more` Namespaces labelled at once (none: no such phase), then the Graph deleted. With
    `profile`, the (first) controller runs profiled and reports once the first phase settled.
    The peak RSS at the end is the last controller's."""
    load = load_average()
    client = await admin_client(kubeconfig)
    tag = f"deco-{int(time.time())}"
    home = f"{tag}-graphs"
    labelled = [f"{tag}-{i:04d}" for i in range(namespaces)]
    later = [f"{tag}-more-{i:04d}" for i in range(more)]
    seen = Decorated()
    followers: list[asyncio.Task[None]] = []
    try:
        await install_kro_crds(client)
        await create_namespaces(client, [home], {})
        for gvr, body, namespace in decorator_applier(home, tag):
            await client.create(gvr, body, namespace=namespace)
        await create_namespaces(client, labelled, {DECORATE_LABEL: "on"})
        await create_namespaces(client, later, {})
        await namespaces_furnished(client, [*labelled, *later], timeout_s)
        followers = [
            asyncio.create_task(
                follow(
                    client,
                    POLICIES,
                    seen.list_policies,
                    seen.see_policy,
                    label_selector=POLICY_SELECTOR,
                )
            ),
            asyncio.create_task(
                follow(client, GRAPHS, seen.list_graphs, seen.see_graph, namespace=home)
            ),
        ]
        controller = Controller.start(kubeconfig, workers, profile=profile, extra_args=GRAPH_GATE)
        try:
            startup = await controller.startup_usage()
            await client.mapper.refresh()
            decorate = await _decorator_phase(
                client,
                controller,
                seen,
                act=client.create(GRAPHS, decorator_graph(home), namespace=home),
                wanted=labelled,
                total=namespaces,
                timeout_s=timeout_s,
            )
            profile_report = await controller.profile_report()
            restarted: dict[str, Any] = {}
            if restart:
                controller, restarted["restart"] = await _restart_phase(
                    client, controller, kubeconfig, workers, seen, namespaces=namespaces
                )
            label_more = (
                await _decorator_phase(
                    client,
                    controller,
                    seen,
                    act=label_namespaces(client, later, DECORATE_LABEL),
                    wanted=later,
                    total=namespaces + more,
                    timeout_s=timeout_s,
                )
                if later
                else None
            )
            started = time.monotonic()
            await client.delete(GRAPHS, DECORATOR, namespace=home)
            gone_at = await seen.until(lambda: seen.graph_gone and not seen.policies, timeout_s)
            _, peak = controller.usage()
        finally:
            controller.stop()
        return {
            "scenario": "graph-decorator",
            "load_average_at_start": load,
            "namespaces": namespaces,
            "more_namespaces": more,
            "client_qps": SETTINGS.client_qps,
            "pinned": SETTINGS.pinned,
            **startup,
            "decorate": decorate,
            **restarted,
            "label_more": label_more,
            "delete_graph_s": gone_at - started if gone_at else None,
            "policies_left_after_delete": len(seen.policies),
            "controller_peak_rss_mib": peak / 2**20,
            **({"profile": profile, "profile_report": profile_report} if profile else {}),
        }
    finally:
        for task in followers:
            task.cancel()
        await asyncio.gather(*followers, return_exceptions=True)
        await client.close()


def report(result: dict[str, Any]) -> None:
    for key, value in result.items():
        if key == "profile_report":
            print(value)
            continue
        if isinstance(value, dict):
            print(f"  {key}:")
            for inner, figure in value.items():
                shown = f"{figure:.3f}" if isinstance(figure, float) else figure
                print(f"    {inner:36} {shown}")
            continue
        print(f"  {key:38} {value:.3f}" if isinstance(value, float) else f"  {key:38} {value}")
    suffix = "-restart" if "restart" in result else ""
    suffix += f"-profile-{result['profile']}" if result.get("profile") else ""
    write_result(f"controller-graph-decorator-{result['namespaces']}ns{suffix}.json", result)


@dataclass(frozen=True)
class GraphDecorator:
    """The scenario (scenario.Scenario)."""

    name: str = "graph-decorator"
    options: frozenset[str] = frozenset({"restart"})

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--more-namespaces",
            type=int,
            default=50,
            help="with --scenario graph-decorator: Namespaces labelled once the first are "
            "decorated",
        )

    def check(self, args: argparse.Namespace) -> str | None:
        return None

    def run(self, args: argparse.Namespace) -> None:
        restarted = ", the controller restarted once they are" if args.restart else ""

        async def main(kubeconfig: str) -> None:
            print(
                f"== graph-decorator: one Graph over {args.namespaces} labelled namespaces"
                f"{restarted}, then {args.more_namespaces} more labelled"
            )
            report(
                await run_graph_decorator(
                    kubeconfig,
                    args.namespaces,
                    args.more_namespaces,
                    args.workers,
                    restart=args.restart,
                    profile=args.profile,
                )
            )

        on_cluster(main, pin=args.pin)


SCENARIO = GraphDecorator()
