"""Fixtures of the fleet's unit tests: one PKI per session (a member's CA, serving and client
certificates)."""

from __future__ import annotations

import pytest

from kro.testing import pki


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> pki.ClusterPKI:
    return pki.generate(tmp_path_factory.mktemp("fleet-pki"))
