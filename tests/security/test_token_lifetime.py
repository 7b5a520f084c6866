"""A token lives at most MAX_TTL_S by the clock of the node that checks it: one minted by a node whose
clock is ahead (a wrong clock its steady clock followed, decision 0010) is refused where it would outlive
that."""

from __future__ import annotations

from api.tokens import MAX_TTL_S, issue_token, verify_token
from cluster.security.peer_auth import ASSERTION_TTL_MS
from metadata_state.records import UserRecord

NOW_S = 1_790_000_000.0
USER = UserRecord("alice", "scrypt$fake-hash-for-the-fingerprint")


def test_rule_a_token_outliving_its_longest_lifetime_by_the_checking_clock_is_refused() -> None:
    users = {USER.name: USER}
    token, _ = issue_token("secret", USER, MAX_TTL_S, now_s=NOW_S)
    assert verify_token("secret", token, users, now_s=NOW_S) is not None
    agreed = NOW_S + ASSERTION_TTL_MS / 1000  # a minting node as far ahead as clocks may be apart
    token, _ = issue_token("secret", USER, MAX_TTL_S, now_s=agreed)
    assert verify_token("secret", token, users, now_s=NOW_S) is not None
    ahead, _ = issue_token("secret", USER, MAX_TTL_S, now_s=NOW_S + 3600)  # a node an hour ahead
    assert verify_token("secret", ahead, users, now_s=NOW_S) is None
    short, _ = issue_token("secret", USER, 60, now_s=NOW_S + 3600)  # within the longest lifetime: valid
    assert verify_token("secret", short, users, now_s=NOW_S) is not None
