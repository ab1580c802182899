"""kro.api's public surface: explicit, sorted, importable."""

from __future__ import annotations

import kro.api


def test_all_is_sorted_and_complete() -> None:
    assert kro.api.__all__ == sorted(kro.api.__all__)
    for name in kro.api.__all__:
        assert hasattr(kro.api, name), name


def test_package_docstring_states_the_contract() -> None:
    assert kro.api.__doc__ is not None
    assert "Must not import" in kro.api.__doc__
