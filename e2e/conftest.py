"""e2e tests run against a real control plane (kro.testing): every test here is marked e2e."""

from __future__ import annotations

import pytest

# The local control plane and its fixtures (kube_cluster, kube_namespace, ...): kro.testing's
# plugin activates only when a suite asks for it.
pytest_plugins = ["kro.testing.pytest_plugin"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.e2e)
