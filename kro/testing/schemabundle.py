"""kro.testing.schemabundle: regenerate the offline schema bundle from a real kube-apiserver.

The offline CLI (`kro validate`, `kro render`) type-checks RGDs against the built-in Kubernetes
types without a cluster. Those schemas are not hand-written: this module reads /openapi/v3 and
discovery from the kube-apiserver that `kro.testing` builds (v1.36.3), resolves them into
self-contained per-kind schemas with `kro.graph.resolver.build_bundle`, and writes them gzipped
as package data. Run it when the pinned Kubernetes version changes:

    python -m kro.testing.schemabundle            # starts a throwaway cluster
    KUBECONFIG=... python -m kro.testing.schemabundle --use-kubeconfig
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kro.graph.resolver import BUILTIN_BUNDLE, build_bundle
from kro.testing.adminapi import AdminApi
from kro.testing.cluster import ClusterOptions, LocalCluster

OUTPUT = Path(__file__).resolve().parent.parent / "graph" / "schemas" / BUILTIN_BUNDLE


def fetch(api: AdminApi) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Every /openapi/v3 group-version document and every discovery resource list."""
    index = api.get("/openapi/v3")
    documents = {
        path: api.get(entry["serverRelativeURL"]) for path, entry in index["paths"].items()
    }
    discovery = [api.get("/api/v1")]
    for group in api.get("/apis")["groups"]:
        for version in group["versions"]:
            discovery.append(api.get(f"/apis/{version['groupVersion']}"))
    return documents, discovery


def write(api: AdminApi, output: Path = OUTPUT) -> int:
    """Build and write the bundle; returns the number of kinds."""
    documents, discovery = fetch(api)
    bundle = build_bundle(documents, discovery)
    text = json.dumps(bundle, sort_keys=True, separators=(",", ":")).encode()
    tmp = output.with_suffix(".tmp")
    tmp.write_bytes(gzip.compress(text, mtime=0))
    tmp.replace(output)
    return len(bundle)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kro.testing.schemabundle")
    parser.add_argument("--use-kubeconfig", action="store_true", help="read $KUBECONFIG's cluster")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    if args.use_kubeconfig:
        count = write(AdminApi.from_kubeconfig(Path(os.environ["KUBECONFIG"])), args.output)
    else:
        with LocalCluster(options=ClusterOptions(nodes=0)) as state:
            count = write(AdminApi.from_kubeconfig(Path(state.kubeconfig)), args.output)
    print(f"wrote {count} kinds to {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
