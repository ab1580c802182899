"""GC cost with a large resident informer cache, before/after kro.runtime.manager.tune_gc.

    .venv/bin/python bench/bench_gc.py [--objects 10000]

Each mode runs in a fresh interpreter: 10k Deployment-sized dicts stay resident (the cache),
then we measure
* full   : one explicit full collection (the pause a gen2 collection costs the event loop);
* decode : median time to orjson-decode a 1,000-item list (a relist page burst);
* relist : decode pages of 1,000 until a second copy of the cache is built (what a 410 relist
           does while the old store is still alive), with the longest single GC pause and the
           number of gen2 collections seen via gc.callbacks.
Steady-state watch churn (decode one object, drop the old one) allocates and frees in balance
and triggers almost no collections, so it is not a row.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import time
from typing import Any

import orjson

MODES = {
    "default": None,
    "freeze": (True, None),
    "freeze+thresholds": (True, (50_000, 20, 100)),
    "thresholds": (False, (50_000, 20, 100)),
}


def deployment(i: int) -> dict[str, Any]:
    labels = {"app": f"app-{i}", "tier": "web", "team": f"team-{i % 17}"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": f"app-{i}",
            "namespace": f"ns-{i % 50}",
            "uid": f"00000000-0000-0000-0000-{i:012d}",
            "resourceVersion": str(1000 + i),
            "generation": 3,
            "labels": labels,
            "annotations": {"kro.run/owned": "true", "note": "x" * 40},
        },
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "containers": [
                        {
                            "name": f"c{c}",
                            "image": f"registry.example/app:{i}.{c}",
                            "ports": [{"containerPort": 8080 + c, "protocol": "TCP"}],
                            "env": [{"name": f"E{e}", "value": str(e)} for e in range(6)],
                            "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}},
                        }
                        for c in range(2)
                    ]
                },
            },
        },
        "status": {
            "replicas": 3,
            "readyReplicas": 3,
            "conditions": [
                {"type": t, "status": "True", "reason": "Ok", "message": "fine"}
                for t in ("Available", "Progressing")
            ],
        },
    }


def run_mode(mode: str, objects: int) -> None:
    from kro.runtime.manager import GcTuning, tune_gc

    cache = {i: deployment(i) for i in range(objects)}
    setting = MODES[mode]
    if setting is not None:
        freeze, thresholds = setting
        tune_gc(GcTuning(freeze=freeze, thresholds=thresholds))

    started = time.perf_counter()
    gc.collect()
    full_ms = (time.perf_counter() - started) * 1e3

    page = orjson.dumps({"items": [deployment(i) for i in range(1000)]})
    decodes = []
    for _ in range(15):
        started = time.perf_counter()
        orjson.loads(page)
        decodes.append((time.perf_counter() - started) * 1e3)

    pauses: list[float] = []
    gen2 = 0
    begun = 0.0

    def on_gc(phase: str, info: dict[str, int]) -> None:
        nonlocal begun, gen2
        if phase == "start":
            begun = time.perf_counter()
        else:
            pauses.append((time.perf_counter() - begun) * 1e3)
            gen2 += info["generation"] == 2

    gc.callbacks.append(on_gc)
    started = time.perf_counter()
    relisted = [orjson.loads(page)["items"] for _ in range(objects // 1000)]
    relist_ms = (time.perf_counter() - started) * 1e3
    gc.callbacks.remove(on_gc)
    del relisted, cache  # the cache was resident for every measurement above

    print(
        f"{mode:<18} full={full_ms:7.1f} ms  decode(median)={statistics.median(decodes):6.1f} ms"
        f"  relist={relist_ms:7.1f} ms  max_pause={max(pauses, default=0.0):6.1f} ms"
        f"  collections={len(pauses)} gen2={gen2}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--mode", choices=sorted(MODES))
    args = parser.parse_args()
    if args.mode:
        run_mode(args.mode, args.objects)
        return
    print(f"objects={args.objects} python={sys.version.split()[0]} default={gc.get_threshold()}")
    for mode in MODES:
        subprocess.run(
            [sys.executable, __file__, "--mode", mode, "--objects", str(args.objects)], check=True
        )


if __name__ == "__main__":
    main()
