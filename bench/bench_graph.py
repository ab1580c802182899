"""Compile time of `build_graph` for generated RGDs of 10, 50 and 200 resources; prints, never
asserts.

    .venv/bin/python bench/bench_graph.py [--sizes 10 50 200] [--repeat 5]

Target: <= 50 ms for 50 resources. Each RGD is made of "app units" of five resources with
realistic templates: a ConfigMap, a ServiceAccount, a Deployment reading both (with readyWhen),
a Service selecting the Deployment's labels, and an Ingress behind includeWhen; every fifth
unit's ConfigMap is a forEach collection instead. The instance status projects two fields per
unit. Every build starts from scratch (schemas are translated to CEL types per build, as the
controller does for each GraphRevision); the resolver's bundle is loaded once.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from kro.graph.builder import build_graph
from kro.graph.resolver import OfflineSchemaResolver


def _unit(i: int) -> list[dict[str, Any]]:
    name = f"${{schema.spec.name}}-{i}"
    config: dict[str, Any] = {
        "id": f"cm{i}",
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
    config_name = f"cm{i}[0].metadata.name" if i % 5 == 4 else f"cm{i}.metadata.name"
    return [
        config,
        {
            "id": f"sa{i}",
            "template": {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}},
        },
        {
            "id": f"deploy{i}",
            "readyWhen": [f"${{deploy{i}.status.availableReplicas == deploy{i}.spec.replicas}}"],
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
                            "serviceAccountName": f"${{sa{i}.metadata.name}}",
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
            "id": f"svc{i}",
            "template": {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name},
                "spec": {
                    "selector": f"${{deploy{i}.spec.selector.matchLabels}}",
                    "ports": [{"port": 80, "targetPort": "${schema.spec.port}"}],
                },
            },
        },
        {
            "id": f"ing{i}",
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
                                                "name": f"${{svc{i}.metadata.name}}",
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


def generated_rgd(size: int) -> dict[str, Any]:
    """An RGD with `size` resources (rounded up to whole units of five)."""
    units = max(1, -(-size // 5))
    resources = [r for i in range(units) for r in _unit(i)]
    status = {f"ready{i}": f"${{deploy{i}.status.availableReplicas}}" for i in range(units)} | {
        f"ip{i}": f"${{svc{i}.spec.clusterIP}}" for i in range(units)
    }
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "metadata": {"name": f"bench-{size}"},
        "spec": {
            "schema": {
                "apiVersion": "v1alpha1",
                "kind": "BenchApp",
                "spec": {
                    "name": "string",
                    "image": 'string | default="nginx"',
                    "replicas": "integer | default=2",
                    "port": "integer | default=8080",
                    "ingress": "boolean | default=false",
                    "tiers": '[]string | default=["a","b"]',
                },
                "status": status,
            },
            "resources": resources,
        },
    }


def measure(size: int, repeat: int, resolver: OfflineSchemaResolver) -> list[float]:
    rgd = generated_rgd(size)
    timings: list[float] = []
    for _ in range(repeat):
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
    print(f"{'resources':>9}  {'best ms':>8}  {'median ms':>9}  {'ms/resource':>11}")
    for size in args.sizes:
        timings = measure(size, args.repeat, resolver)
        count = len(generated_rgd(size)["spec"]["resources"])
        best = min(timings)
        print(
            f"{count:>9}  {best:>8.1f}  {statistics.median(timings):>9.1f}  {best / count:>11.2f}"
        )


if __name__ == "__main__":
    main()
