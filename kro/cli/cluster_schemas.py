"""kro.cli.cluster_schemas: `kro validate --kubeconfig`: kinds a cluster knows (its CRDs).

The offline bundle and `--crd` files are consulted first; only kinds they do not know are
read from the cluster's OpenAPI, prefetched once for every kind the RGDs name. The library
code underneath logs its progress (`config.loaded`, `schemas.fetched`) for the controller's
operators; a CLI user asked for a verdict, so those records are silenced while it runs and
only warnings reach stderr (stdout stays clean for `-o json`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import structlog

from kro.graph.resolver import (
    GVK,
    OfflineSchemaResolver,
    ResolvedSchema,
    SchemaNotFoundError,
    SchemaResolver,
    referenced_gvks,
)


class ClusterSchemaError(Exception):
    """The cluster could not be reached or read; the message is one line."""


class _LiveBacked(OfflineSchemaResolver):
    """The offline bundle and `--crd` files first, then the schemas prefetched from a cluster."""

    def __init__(self, offline: OfflineSchemaResolver, live: SchemaResolver) -> None:
        super().__init__()
        self._entries = offline._entries
        self._live = live

    def resolve(self, gvk: GVK) -> ResolvedSchema:
        try:
            return super().resolve(gvk)
        except SchemaNotFoundError:
            return self._live.resolve(gvk)


def with_cluster_schemas(
    kubeconfig: str, offline: OfflineSchemaResolver, rgds: Sequence[Mapping[str, Any]]
) -> OfflineSchemaResolver:
    """A resolver that also answers for the cluster's kinds the RGDs reference."""
    from kro.runtime.errors import KubeError

    try:
        with quiet_logs():
            return asyncio.run(_prefetch(kubeconfig, offline, rgds))
    except KubeError as error:
        message = " ".join(str(error).split())
        raise ClusterSchemaError(f"cannot read schemas from the cluster: {message}") from error


async def _prefetch(
    kubeconfig: str, offline: OfflineSchemaResolver, rgds: Sequence[Mapping[str, Any]]
) -> OfflineSchemaResolver:
    from kro.controllers.schemas import LiveSchemaResolver
    from kro.runtime.client import Client

    async with await Client.from_kubeconfig(kubeconfig) as client:
        live = LiveSchemaResolver(client)
        wanted = [gvk for rgd in rgds for gvk in referenced_gvks(rgd.get("spec") or {})]
        await live.prefetch(wanted)
    return _LiveBacked(offline, live)


@contextlib.contextmanager
def quiet_logs() -> Iterator[None]:
    """Only warnings and errors, on stderr, for the duration; the previous setup restored.

    Scoped rather than process-wide, because the CLI also runs inside tests and the e2e
    harness, whose own logging setup must survive the command.
    """
    was_configured = structlog.is_configured()
    previous = structlog.get_config()
    root = logging.getLogger()
    previous_level = root.level
    overrides: dict[str, Any] = {
        "wrapper_class": structlog.make_filtering_bound_logger(logging.WARNING),
        "cache_logger_on_first_use": False,
    }
    if not was_configured:  # structlog's default prints to stdout
        overrides["logger_factory"] = structlog.PrintLoggerFactory(sys.stderr)
    structlog.configure(**overrides)
    root.setLevel(max(previous_level, logging.WARNING))
    try:
        yield
    finally:
        root.setLevel(previous_level)
        if was_configured:
            structlog.configure(**previous)
        else:
            structlog.reset_defaults()
