"""The member ledger vouches only for what it was told, and forgets on a new shard epoch."""

from __future__ import annotations

from kro.applyset import MemberLedger


def test_it_vouches_for_a_started_applyset_and_for_the_same_uids() -> None:
    ledger = MemberLedger()
    assert not ledger.nothing_to_prune("a", ["u1"])  # never heard of
    ledger.started("a")
    assert ledger.nothing_to_prune("a", ["u1", "u2"])  # no member can exist yet
    ledger.settled("a", ["u2", "u1"])
    assert ledger.nothing_to_prune("a", ["u1", "u2"])  # order does not matter
    assert not ledger.nothing_to_prune("a", ["u1"])  # u2 may need pruning
    assert not ledger.nothing_to_prune("a", ["u1", "u2", "u3"])  # conservative: list
    ledger.forget("a")
    assert not ledger.nothing_to_prune("a", ["u1", "u2"])


def test_a_new_epoch_forgets_everything_and_the_size_is_bounded() -> None:
    ledger = MemberLedger(max_entries=2)
    ledger.settled("a", ["u1"])
    ledger.epoch(0)  # unchanged
    assert ledger.nothing_to_prune("a", ["u1"])
    ledger.epoch(1)
    assert not ledger.nothing_to_prune("a", ["u1"])
    for applyset in ("a", "b", "c"):
        ledger.started(applyset)
    assert len(ledger) == 2
    assert not ledger.nothing_to_prune("a", [])  # the least recently used went
