"""The member ledger vouches only for what it was told, and forgets on a new shard epoch."""

from __future__ import annotations

from kro.applyset import MemberLedger
from kro.runtime.memory import Fact


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
    assert ledger.memory.size(Fact("members")) == 2
    assert not ledger.nothing_to_prune("a", [])  # the least recently used went


def test_passes_that_do_not_prune_keep_the_member_set_exact_or_forget_it() -> None:
    ledger = MemberLedger()
    ledger.started("a")
    ledger.unpruned("a", ["u1"])  # the first pass created u1 and had to wait: members {u1}
    assert ledger.nothing_to_prune("a", ["u1"])
    assert not ledger.nothing_to_prune("a", ["u2"])  # u1 would be an orphan
    ledger.unpruned("a", ["u1"])  # the same set again: still exact
    assert ledger.nothing_to_prune("a", ["u1"])
    ledger.unpruned("a", ["u1", "u2"])  # u2 created without a prune: {u1, u2}, or more
    assert not ledger.nothing_to_prune("a", ["u1", "u2"])
    ledger.unpruned("b", ["u3"])  # unknown stays unknown
    assert not ledger.nothing_to_prune("b", ["u3"])
