"""`kro controller --shards=auto` campaigns for the leader Lease whatever `--leader-elect`
says: the Lease decides who writes RGDs, GraphRevisions and CRDs."""

from __future__ import annotations

import pytest

from kro.api.names import LEADER_ELECTION_LEASE
from kro.cli.controller import _leader_election
from kro.cli.flags import parse_controller_args


@pytest.mark.parametrize(
    ("args", "elects"),
    [
        ([], False),
        (["--leader-elect=true"], True),
        (["--shards=auto"], True),
        (["--shards=auto", "--leader-elect=false"], True),
        (["--shards=off", "--leader-elect=false"], False),
    ],
)
def test_sharded_replicas_always_campaign(args: list[str], elects: bool) -> None:
    config = parse_controller_args(["--leader-election-namespace=kro-system", *args])
    election = _leader_election(config)
    assert (election is not None) is elects
    if election is not None:
        assert election.lease_name == LEADER_ELECTION_LEASE
        assert election.lease_namespace == "kro-system"


def test_sharded_replicas_use_the_leader_election_timings() -> None:
    config = parse_controller_args(
        [
            "--shards=auto",
            "--leader-election-namespace=ns",
            "--leader-election-lease-duration=4s",
            "--leader-election-renew-deadline=3s",
            "--leader-election-retry-period=1s",
        ]
    )
    election = _leader_election(config)
    assert election is not None
    assert (election.lease_duration_s, election.renew_deadline_s, election.retry_period_s) == (
        4.0,
        3.0,
        1.0,
    )
