"""Wall time of the `kro` command as a CI job runs it; prints, never asserts.

    .venv/bin/python bench/bench_cli.py [--repeat 3]

Three figures, each the median of `--repeat` runs of a fresh `python -m kro` process (so the
start-up, imports included, is paid every time, as in CI):

- `kro --help`: the start-up cost alone (target: under 0.5 s);
- `kro validate -f big.yaml`: one RGD of 200 resources (40 units of a ConfigMap, a
  ServiceAccount, a Deployment reading both with readyWhen, a Service and a conditional
  Ingress);
- `kro validate -f dir/`: a directory of 100 RGDs of 5 resources each (one unit each).

The RGDs are generated into a temporary directory; nothing is left behind.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

UNIT_SIZE = 5


def _unit(n: int) -> list[dict[str, Any]]:
    """Five resources of one app: config, account, deployment, service, ingress."""
    name = f"${{schema.spec.name}}-{n}"
    ready = f"${{deployment{n}.status.availableReplicas == deployment{n}.spec.replicas}}"
    labels = {"app": name}
    return [
        {"id": f"config{n}", "template": {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"replicas": "${string(schema.spec.replicas)}"}}},
        {"id": f"account{n}", "template": {
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}},
        {"id": f"deployment{n}",
         "readyWhen": [ready],
         "template": {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": "${schema.spec.replicas}", "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "serviceAccountName": f"${{account{n}.metadata.name}}",
                         "containers": [{"name": "app", "image": "${schema.spec.image}",
                                         "envFrom": [{"configMapRef": {
                                             "name": f"${{config{n}.metadata.name}}"}}]}]}}}}},
        {"id": f"service{n}", "template": {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": f"${{deployment{n}.spec.selector.matchLabels}}",
                     "ports": [{"port": 80}]}}},
        {"id": f"ingress{n}", "includeWhen": ["${schema.spec.ingress}"], "template": {
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": name},
            "spec": {"rules": [{"http": {"paths": [{"path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": f"${{service{n}.metadata.name}}",
                                        "port": {"number": 80}}}}]}}]}}},
    ]  # fmt: skip


def rgd(name: str, kind: str, units: int) -> dict[str, Any]:
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "metadata": {"name": name},
        "spec": {
            "schema": {
                "apiVersion": "v1alpha1",
                "kind": kind,
                "spec": {
                    "name": "string | required=true",
                    "image": 'string | default="nginx"',
                    "replicas": "integer | default=1 minimum=1",
                    "ingress": "boolean | default=false",
                },
            },
            "resources": [r for n in range(units) for r in _unit(n)],
        },
    }


def _time(argv: list[str], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "kro", *argv], capture_output=True, text=True, check=False
        )
        samples.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"kro {' '.join(argv)} failed:\n{done.stderr}")
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        big = root / "big.yaml"
        big.write_text(yaml.safe_dump(rgd("big", "Big", 200 // UNIT_SIZE)), encoding="utf-8")
        many = root / "many"
        many.mkdir()
        for index in range(100):
            document = rgd(f"app{index}", f"App{index}", 1)
            (many / f"rgd{index:03}.yaml").write_text(yaml.safe_dump(document), encoding="utf-8")
        runs = {
            "kro --help (start-up)": ["--help"],
            "kro validate: 1 RGD, 200 resources": ["validate", "-f", str(big)],
            "kro validate: directory of 100 RGDs": ["validate", "-f", str(many)],
        }
        figures = {label: _time(argv, args.repeat) for label, argv in runs.items()}
    width = max(map(len, figures))
    for label, seconds in figures.items():
        print(f"{label:<{width}}  {seconds:6.3f} s  (median of {args.repeat})")


if __name__ == "__main__":
    main()
