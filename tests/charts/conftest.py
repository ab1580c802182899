"""Fixtures for the chart tests: the helm binary from kro.testing.testbin."""

from __future__ import annotations

from pathlib import Path

import pytest

from kro.testing import testbin


@pytest.fixture(scope="session")
def helm() -> Path:
    """helm v3 built from the committed Go module (cached after the first build).

    On a fresh machine the first call waits for the control-plane build that holds the testbin
    lock, so the chart test modules raise their timeout (see `pytestmark` there).
    """
    return testbin.ensure(["helm"])["helm"]
