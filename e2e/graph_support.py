"""e2e/graph_support.py: waiting on a Graph's conditions and its deletion, for every e2e module
that creates Graphs (their own fixtures decide where the Graphs live)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from kro.runtime.client import Client
from kro.runtime.errors import NotFound
from kro.runtime.gvk import GVR
from kro.testing.waiting import eventually

GRAPHS = GVR("kro.run", "v1alpha1", "graphs")
TIMEOUT_S = 60.0


def graph_condition(obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The condition `kind` of a Graph, {} when it has none."""
    found = [c for c in (obj.get("status") or {}).get("conditions") or () if c["type"] == kind]
    return found[0] if found else {}


async def wait_for_graph(
    client: Client,
    namespace: str,
    name: str,
    kind: str,
    status: str,
    *,
    reason: str = "",
    timeout_s: float = TIMEOUT_S,
) -> dict[str, Any]:
    """The Graph once its condition `kind` has `status` (and `reason`, when given); a timeout
    says which conditions it had instead."""

    async def probe() -> dict[str, Any] | None:
        obj: dict[str, Any] = await client.get(GRAPHS, name, namespace=namespace)
        found = graph_condition(obj, kind)
        if found.get("status") == status and (not reason or found.get("reason") == reason):
            return obj
        return None

    try:
        result: dict[str, Any] = await eventually(
            probe, what=f"Graph {name} {kind}={status} {reason}", timeout_s=timeout_s
        )
    except AssertionError as error:
        obj = await client.get(GRAPHS, name, namespace=namespace)
        conditions = (obj.get("status") or {}).get("conditions")
        raise AssertionError(f"{error}; conditions: {conditions}") from None
    return result


async def delete_graph(
    client: Client, namespace: str, name: str, *, timeout_s: float = TIMEOUT_S
) -> None:
    """Delete the Graph and wait until it is gone (kro tore down what it applied)."""
    with contextlib.suppress(NotFound):
        await client.delete(GRAPHS, name, namespace=namespace)

    async def gone() -> bool:
        try:
            await client.get(GRAPHS, name, namespace=namespace)
        except NotFound:
            return True
        return False

    await eventually(gone, what=f"Graph {name} gone", timeout_s=timeout_s)
