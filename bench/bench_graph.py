"""Compile time of `build_graph` for generated RGDs of 10, 50 and 200 resources; prints, never
asserts.

    .venv/bin/python bench/bench_graph.py [--sizes 10 50 200] [--repeat 5]

Target: <= 50 ms for 50 resources. Each RGD is made of "app units" of five resources with
realistic templates: a ConfigMap, a ServiceAccount, a Deployment reading both (with readyWhen),
a Service selecting the Deployment's labels, and an Ingress behind includeWhen; every fifth
unit's ConfigMap is a forEach collection instead. The instance status projects two fields per
unit. The resolver's bundle is loaded once and the engine started before timing.

Two figures per size, because kro.cel keeps process-wide caches:

- `new`: every build is of a different RGD (other resource ids, expressions and instance
  spec), so nothing of one build's expressions or environments is reused; only the per-kind
  schema translations are, which any controller process has after its first RGD. This is the
  cost of compiling an edited or a new RGD.
- `rebuild`: the same RGD again, which is what the controller does for every new spec: the
  RGD controller builds it to validate it, then the GraphRevision controller builds the
  revision's snapshot. The second build reuses the check environments and the compiled
  expressions of the first.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from typing import Any

from kro.graph.builder import build_graph
from kro.graph.resolver import OfflineSchemaResolver


def _unit(i: int, variant: str = "") -> list[dict[str, Any]]:
    name = f"${{schema.spec.name}}-{i}"
    cm, sa, deploy, svc, ing = (
        f"{kind}{i}{variant}" for kind in ("cm", "sa", "deploy", "svc", "ing")
    )
    config: dict[str, Any] = {
        "id": cm,
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"app": "${schema.spec.name}"}},
            "data": {
                "replicas": "${string(schema.spec.replicas)}",
                "image": "${schema.spec.image}",
            },
        },
    }
    if i % 5 == 4:
        config["forEach"] = [{"tier": "${schema.spec.tiers}"}]
        config["template"]["metadata"]["name"] = f"${{schema.spec.name}}-{i}-${{tier}}"
    config_name = f"{cm}[0].metadata.name" if i % 5 == 4 else f"{cm}.metadata.name"
    return [
        config,
        {
            "id": sa,
            "template": {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}},
        },
        {
            "id": deploy,
            "readyWhen": [f"${{{deploy}.status.availableReplicas == {deploy}.spec.replicas}}"],
            "template": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "labels": {"app": "${schema.spec.name}"}},
                "spec": {
                    "replicas": "${schema.spec.replicas}",
                    "selector": {"matchLabels": {"app": name}},
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {
                            "serviceAccountName": f"${{{sa}.metadata.name}}",
                            "containers": [
                                {
                                    "name": "web",
                                    "image": "${schema.spec.image}",
                                    "ports": [{"containerPort": "${schema.spec.port}"}],
                                    "envFrom": [{"configMapRef": {"name": f"${{{config_name}}}"}}],
                                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                                }
                            ],
                        },
                    },
                },
            },
        },
        {
            "id": svc,
            "template": {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name},
                "spec": {
                    "selector": f"${{{deploy}.spec.selector.matchLabels}}",
                    "ports": [{"port": 80, "targetPort": "${schema.spec.port}"}],
                },
            },
        },
        {
            "id": ing,
            "includeWhen": ["${schema.spec.ingress}"],
            "template": {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "Ingress",
                "metadata": {"name": name},
                "spec": {
                    "rules": [
                        {
                            "host": f"${{schema.spec.name}}-{i}.example.com",
                            "http": {
                                "paths": [
                                    {
                                        "path": "/",
                                        "pathType": "Prefix",
                                        "backend": {
                                            "service": {
                                                "name": f"${{{svc}.metadata.name}}",
                                                "port": {"number": 80},
                                            }
                                        },
                                    }
                                ]
                            },
                        }
                    ]
                },
            },
        },
    ]


def generated_rgd(size: int, variant: int | None = None) -> dict[str, Any]:
    """An RGD with `size` resources (rounded up to whole units of five).

    A `variant` number renames every resource id and adds an instance spec field, so no two
    variants share an expression or a declaration set.
    """
    suffix = "" if variant is None else f"v{variant}"
    units = max(1, -(-size // 5))
    resources = [r for i in range(units) for r in _unit(i, suffix)]
    status = {
        f"ready{i}": f"${{deploy{i}{suffix}.status.availableReplicas}}" for i in range(units)
    } | {f"ip{i}": f"${{svc{i}{suffix}.spec.clusterIP}}" for i in range(units)}
    spec = {
        "name": "string",
        "image": 'string | default="nginx"',
        "replicas": "integer | default=2",
        "port": "integer | default=8080",
        "ingress": "boolean | default=false",
        "tiers": '[]string | default=["a","b"]',
    }
    if variant is not None:
        spec[f"extra{suffix}"] = "string"
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "metadata": {"name": f"bench-{size}"},
        "spec": {
            "schema": {
                "apiVersion": "v1alpha1",
                "kind": "BenchApp",
                "spec": spec,
                "status": status,
            },
            "resources": resources,
        },
    }


_variants = itertools.count()


def measure(size: int, repeat: int, resolver: OfflineSchemaResolver, *, new: bool) -> list[float]:
    """Build times in ms: `repeat` different RGDs (`new`), or one RGD `repeat` times after a
    first, untimed build."""
    rgds = [generated_rgd(size, next(_variants)) for _ in range(repeat)] if new else []
    if not new:
        rgds = [generated_rgd(size)] * repeat
        build_graph(rgds[0], resolver)
    timings: list[float] = []
    for rgd in rgds:
        start = time.perf_counter()
        graph = build_graph(rgd, resolver)
        timings.append((time.perf_counter() - start) * 1000)
        assert len(graph.nodes) == len(rgd["spec"]["resources"])
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 50, 200])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    resolver = OfflineSchemaResolver.from_files()
    build_graph(generated_rgd(5), resolver)  # warm up: engine start-up is a one-off per process
    print(f"{'resources':>9}  {'build':>7}  {'best ms':>8}  {'median ms':>9}  {'ms/resource':>11}")
    for size in args.sizes:
        count = len(generated_rgd(size)["spec"]["resources"])
        for label, new in (("new", True), ("rebuild", False)):
            timings = measure(size, args.repeat, resolver, new=new)
            best = min(timings)
            median = statistics.median(timings)
            print(f"{count:>9}  {label:>7}  {best:>8.1f}  {median:>9.1f}  {best / count:>11.2f}")


if __name__ == "__main__":
    main()
