"""The replay guard accepts a nonce once while its assertion is valid, forgets it only after, and
refuses rather than forgets when full."""

from __future__ import annotations

import pytest

from cluster.security.peer_auth import ASSERTION_TTL_MS
from cluster.security.replay_guard import IssuedBeforeGuard, ReplayGuard, ReplayGuardFull


def test_a_nonce_is_accepted_once_until_its_assertion_expires() -> None:
    guard = ReplayGuard(since_ms=0)
    assert guard.first_use(b"a", expires_ms=60_000, now_ms=0, by="n")
    assert not guard.first_use(b"a", expires_ms=60_000, now_ms=59_999, by="n")
    assert not guard.first_use(b"a", expires_ms=60_000, now_ms=60_000, by="n")  # still valid at its expiry
    assert guard.first_use(b"b", expires_ms=120_000, now_ms=61_000, by="n")
    assert len(guard) == 1  # `a` forgotten once expired; an expired assertion is refused before this


def test_a_full_guard_refuses_instead_of_forgetting_early() -> None:
    guard = ReplayGuard(since_ms=0, capacity=2)
    assert guard.first_use(b"a", expires_ms=60_000, now_ms=0, by="n")
    assert guard.first_use(b"b", expires_ms=90_000, now_ms=0, by="n")
    with pytest.raises(ReplayGuardFull):
        guard.first_use(b"c", expires_ms=60_000, now_ms=1_000, by="n")
    assert not guard.first_use(b"a", expires_ms=60_000, now_ms=59_000, by="n")  # still remembered
    assert guard.first_use(b"c", expires_ms=120_000, now_ms=61_000, by="n")  # room again once `a` expired
    assert not guard.first_use(b"b", expires_ms=90_000, now_ms=61_000, by="n")


def test_rule_a_nonce_checked_by_a_stale_clock_after_it_was_forgotten_is_refused() -> None:
    """A request's clock is read before its body: a replay whose body arrives slowly is checked as of a
    time when its assertion was valid, while another request meanwhile swept its nonce away as expired.
    The guard refuses a nonce it may have forgotten, whatever time the caller read."""
    guard = ReplayGuard(since_ms=0)
    assert guard.first_use(b"a", expires_ms=60_000, now_ms=0, by="n")
    assert guard.first_use(b"b", expires_ms=120_000, now_ms=61_000, by="n")  # sweeps `a` away
    assert not guard.first_use(b"a", expires_ms=60_000, now_ms=59_000, by="n")  # the replay, read at 59 s
    assert guard.first_use(b"c", expires_ms=119_000, now_ms=59_000, by="n")  # a slow request still valid


def test_an_assertion_issued_before_the_guard_started_is_refused() -> None:
    started = 1_000_000
    guard = ReplayGuard(since_ms=started)
    with pytest.raises(IssuedBeforeGuard):
        guard.first_use(b"a", expires_ms=started + ASSERTION_TTL_MS - 1, now_ms=started + 5, by="n")
    assert guard.first_use(b"b", expires_ms=started + ASSERTION_TTL_MS, now_ms=started + 5, by="n")


def test_w16_a_principal_that_fills_its_share_denies_no_other() -> None:
    guard = ReplayGuard(since_ms=0, capacity=6, per_principal=3)
    for nonce in (b"a1", b"a2", b"a3"):
        assert guard.first_use(nonce, expires_ms=60_000, now_ms=0, by="alice")
    with pytest.raises(ReplayGuardFull):
        guard.first_use(b"a4", expires_ms=60_000, now_ms=0, by="alice")
    for nonce in (b"b1", b"b2", b"b3"):  # bob is not refused for alice's fan-out
        assert guard.first_use(nonce, expires_ms=90_000, now_ms=0, by="bob")
    with pytest.raises(ReplayGuardFull):  # and the whole guard stays bounded
        guard.first_use(b"c1", expires_ms=60_000, now_ms=0, by="carol")
    assert guard.first_use(b"a4", expires_ms=120_000, now_ms=61_000, by="alice")  # her share is back
    assert not guard.first_use(b"b1", expires_ms=90_000, now_ms=61_000, by="bob")  # still remembered
