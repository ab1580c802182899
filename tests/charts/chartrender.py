"""Render charts/kro with the real helm binary and hand back the objects as dicts.

The chart tests assert on what Kubernetes would receive, so they parse `helm template` output
rather than reading templates. helm comes from kro.testing.testbin (built from Go modules once,
then cached). FLAGS (and GATED_FLAGS, passed with the MultiCluster gate only) is the value <->
flag table that the chart, the controller's command line and docs/configuration.md must agree on.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "kro"
NAMESPACE = "kro-system"
RELEASE = "kro"

# values path under `config` -> (controller flag, rendered default)
FLAGS: dict[str, tuple[str, str]] = {
    "metricsBindAddress": ("--metrics-bind-address", ":8078"),
    "healthProbeBindAddress": ("--health-probe-bind-address", ":8079"),
    "enableLeaderElection": ("--leader-elect", "true"),
    "leaderElectionLeaseDuration": ("--leader-election-lease-duration", "15s"),
    "leaderElectionRenewDeadline": ("--leader-election-renew-deadline", "10s"),
    "leaderElectionRetryPeriod": ("--leader-election-retry-period", "2s"),
    "enableControllerWarmup": ("--enable-controller-warmup", "false"),
    "allowCRDDeletion": ("--allow-crd-deletion", "false"),
    "gracefulShutdownTimeout": ("--graceful-shutdown-timeout", "60s"),
    "resourceGraphDefinitionConcurrentReconciles": (
        "--resource-graph-definition-concurrent-reconciles", "1"),
    "graphRevisionConcurrentReconciles": ("--graph-revision-concurrent-reconciles", "1"),
    "graphConcurrentReconciles": ("--graph-concurrent-reconciles", "1"),  # V-80
    "dynamicControllerConcurrentReconciles": ("--dynamic-controller-concurrent-reconciles", "1"),
    "dynamicControllerRateLimiterMinDelay": (
        "--dynamic-controller-rate-limiter-min-delay", "200ms"),
    "dynamicControllerRateLimiterMaxDelay": (
        "--dynamic-controller-rate-limiter-max-delay", "1000s"),
    "dynamicControllerRateLimiterRateLimit": ("--dynamic-controller-rate-limiter-rate-limit", "10"),
    "dynamicControllerRateLimiterBurstLimit": (
        "--dynamic-controller-rate-limiter-burst-limit", "100"),
    "instance.requeueInterval": ("--instance-requeue-interval", "3s"),
    "instance.requeueMaxInterval": ("--instance-requeue-max-interval", "5m"),
    "applyConcurrency": ("--apply-concurrency", "20"),
    "skipUnchanged": ("--skip-unchanged", "true"),
    "celCostLimit": ("--cel-cost-limit", "0"),
    "dynamicControllerDefaultResyncPeriod": ("--dynamic-controller-default-resync-period", "36000"),
    "dynamicControllerDefaultQueueMaxRetries": (
        "--dynamic-controller-default-queue-max-retries", "20"),
    "clientQps": ("--client-qps", "100"),
    "clientBurst": ("--client-burst", "150"),
    "rgd.maxCollectionSize": ("--rgd-max-collection-size", "1000"),
    "rgd.maxCollectionDimensionSize": ("--rgd-max-collection-dimension-size", "10"),
    "rgd.maxGraphRevisions": ("--rgd-max-graph-revisions", "5"),
    "resourceGraphDefinitionProgressRequeueDelay": ("--rgd-progress-requeue-delay", "3s"),
    "logLevel": ("--zap-log-level", "info"),
    "logEncoder": ("--zap-encoder", "console"),
    "development": ("--zap-devel", "false"),
    # A map: every gate it names is passed (GraphKind is named in values.yaml, V-81).
    "featureGates": ("--feature-gates", "GraphKind=false"),
}
# Flags rendered only when their value is set: --leader-election-namespace and
# --pprof-bind-address (debug.pprof.*).
OPTIONAL_FLAGS = {"leaderElectionNamespace"}
# Flags the chart derives from the release rather than from a value (V-80): kro's own
# ServiceAccount, which no Graph may impersonate.
RELEASE_FLAGS = {"--controller-namespace": NAMESPACE, "--controller-service-account": RELEASE}
# Flags passed only with the MultiCluster gate on (M-01, M-02): values path under `config` ->
# (controller flag, rendered default). The secrets' namespace defaults to the release's.
MULTICLUSTER_ON: dict[str, Any] = {"config": {"featureGates": {"MultiCluster": True}}}
GATED_FLAGS: dict[str, tuple[str, str]] = {
    "multicluster.enabled": ("--enable-multicluster", "false"),
    "multicluster.clusterSecretsNamespace": ("--cluster-secrets-namespace", NAMESPACE),
    "multicluster.clusterSecretsLabel": (
        "--cluster-secrets-label", "multicluster.runtime/cluster=true"),
    "multicluster.clusterSecretsKey": ("--cluster-secrets-key", "kubeconfig"),
    "multicluster.localClusterName": ("--local-cluster-name", "local"),
}


@dataclass(frozen=True, slots=True)
class Rendered:
    """The objects of one `helm template` run, looked up by kind and name."""

    objects: tuple[dict[str, Any], ...]

    def kinds(self) -> list[tuple[str, str]]:
        return sorted((o["kind"], o["metadata"]["name"]) for o in self.objects)

    def get(self, kind: str, name: str) -> dict[str, Any]:
        for obj in self.objects:
            if obj["kind"] == kind and obj["metadata"]["name"] == name:
                return obj
        raise KeyError(f"no {kind} {name!r} in {self.kinds()}")

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]

    def container(self) -> dict[str, Any]:
        (deployment,) = self.of_kind("Deployment")
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        return dict(container)

    def args(self) -> dict[str, str]:
        """The controller's `--flag=value` arguments as a mapping (each flag appears once)."""
        parsed: dict[str, str] = {}
        for arg in self.container()["args"]:
            flag, equals, value = arg.partition("=")
            assert flag.startswith("--"), f"not a flag: {arg!r}"
            assert equals, f"not --flag=value: {arg!r}"
            assert flag not in parsed, f"{flag} passed twice"
            parsed[flag] = value
        return parsed


def run_helm(helm: Path, *args: str, values: Mapping[str, Any] | None = None,
             check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run helm; `values` are passed as a values file on stdin (`-f -`)."""
    command = [str(helm), *args]
    if values is not None:
        command += ["-f", "-"]
    return subprocess.run(
        command,
        input=yaml.safe_dump(dict(values)) if values is not None else None,
        capture_output=True,
        text=True,
        check=check,
        timeout=120,
        cwd=REPO,
    )


def template_args(extra: Iterable[str] = (), *, release: str = RELEASE,
                  namespace: str = NAMESPACE) -> list[str]:
    return ["template", release, str(CHART), "--namespace", namespace, *extra]


def render(helm: Path, values: Mapping[str, Any] | None = None, *extra: str,
           release: str = RELEASE, namespace: str = NAMESPACE) -> Rendered:
    """`helm template` with the given values; fails the test on any helm error."""
    done = run_helm(helm, *template_args(extra, release=release, namespace=namespace),
                    values=values, check=False)
    assert done.returncode == 0, done.stderr
    return Rendered(tuple(d for d in yaml.safe_load_all(done.stdout) if d))


def render_error(helm: Path, values: Mapping[str, Any] | None = None, *extra: str) -> str:
    """helm's error output for values that must be refused; fails the test if helm accepts them."""
    done = run_helm(helm, *template_args(extra), values=values, check=False)
    assert done.returncode != 0, f"helm accepted {values} {extra}"
    return done.stderr
