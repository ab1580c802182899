"""What the fleet's e2e modules share (a hub and two members, kro.testing.fleet): the flags of
their controller, and the session fleet with its registry Secrets in place.

    controller, kro = kro_fixtures(fleet_args("GraphKind=true", extra=(...)))
    fleet = fleet_fixture()
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from kro_harness import CONTROLLER_ARGS

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
