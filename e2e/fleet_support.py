"""What the fleet's e2e modules share (a hub and two members, kro.testing.fleet): the flags of
their controller, and the session fleet with its registry Secrets in place.

    controller, kro = kro_fixtures(fleet_args("GraphKind=true", extra=(...)))
    fleet = fleet_fixture()
    members = members_fixture()
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest
from kro_harness import CONTROLLER_ARGS, KroEnv

from kro.runtime.client import Client
from kro.runtime.config import load_default
from kro.runtime.errors import NotFound
from kro.runtime.gvk import GVR
from kro.testing.fleet import Fleet

REGISTRY = "kro-system"
"""Where the member clusters' Secrets are (the controller's `--cluster-secrets-namespace`)."""


def fleet_args(*gates: str, extra: Sequence[str] = (), log_level: str = "info") -> tuple[str, ...]:
    """The suite's controller flags with the MultiCluster gate (and `gates`) on and the
    registry in `REGISTRY`, then `extra` (a flag given twice: the later one counts)."""
    return (
        *CONTROLLER_ARGS[:-2],
        "--feature-gates="
        + ",".join(("InstanceConditionEvents=true", *gates, "MultiCluster=true")),
        f"--cluster-secrets-namespace={REGISTRY}",
        *extra,
        f"--log-level={log_level}",
    )


def fleet_fixture() -> Callable[[Fleet], Fleet]:
    """A module's `fleet` fixture: the session fleet, its registry Secrets (re)applied."""

    @pytest.fixture(scope="module")
    def fleet(kube_fleet: Fleet) -> Fleet:
        kube_fleet.register()
        return kube_fleet

    return fleet


MEMBERS = ("member-1", "member-2")
NAMESPACES = GVR("", "v1", "namespaces")


def members_fixture() -> Any:
    """A test's `members` fixture: a client per member, with the test's namespace created in
    each (deleted after the test)."""

    @pytest.fixture
    async def members(fleet: Fleet, kro: KroEnv) -> AsyncIterator[dict[str, Client]]:
        clients: dict[str, Client] = {}
        async with contextlib.AsyncExitStack() as stack:
            for name in MEMBERS:
                config = await load_default(str(fleet.member(name).kubeconfig_path))
                client = await stack.enter_async_context(Client.from_config(config))
                await client.create(NAMESPACES, {"metadata": {"name": kro.namespace}})
                clients[name] = client
            yield clients
            for client in clients.values():
                with contextlib.suppress(NotFound):
                    await client.delete(NAMESPACES, kro.namespace)

    return members
