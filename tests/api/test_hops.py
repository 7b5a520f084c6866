"""The hop limit of forwarding (`api/forwarding.py`, `next_hop`), shared by HTTP forwards and publishes
forwarded over the peer transport: a request goes on while it has hops left and a target, and is
otherwise answered 503 `no_leader` with the target as the leader hint, so requests never loop."""

from __future__ import annotations

import pytest

from api.forwarding import MAX_HOPS, next_hop
from cluster.errors import NotLeader


def test_a_request_with_hops_left_goes_on_to_its_target() -> None:
    assert [next_hop(hops, "node2") for hops in range(MAX_HOPS)] == ["node2"] * MAX_HOPS


def test_a_request_that_used_up_its_hops_is_503_naming_the_leader() -> None:
    with pytest.raises(NotLeader) as refused:
        next_hop(MAX_HOPS, "node2")
    assert (refused.value.code, refused.value.leader) == ("no_leader", "node2")


def test_a_request_with_no_target_is_503_without_a_hint() -> None:
    with pytest.raises(NotLeader) as refused:
        next_hop(0, None)
    assert refused.value.leader is None
