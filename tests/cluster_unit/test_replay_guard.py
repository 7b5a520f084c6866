"""The replay guard accepts a nonce once while its assertion is valid, forgets it only after, and
refuses rather than forgets when full."""

from __future__ import annotations

import pytest

from cluster.replay_guard import ReplayGuard, ReplayGuardFull


def test_a_nonce_is_accepted_once_until_its_assertion_expires() -> None:
    guard = ReplayGuard()
    assert guard.first_use(b"a", expires_ms=60_000, now_ms=0)
    assert not guard.first_use(b"a", expires_ms=60_000, now_ms=59_999)
    assert not guard.first_use(b"a", expires_ms=60_000, now_ms=60_000)  # still valid at its expiry
    assert guard.first_use(b"b", expires_ms=120_000, now_ms=61_000)
    assert len(guard) == 1  # `a` forgotten once expired; an expired assertion is refused before this


def test_a_full_guard_refuses_instead_of_forgetting_early() -> None:
    guard = ReplayGuard(capacity=2)
    assert guard.first_use(b"a", expires_ms=60_000, now_ms=0)
    assert guard.first_use(b"b", expires_ms=90_000, now_ms=0)
    with pytest.raises(ReplayGuardFull):
        guard.first_use(b"c", expires_ms=60_000, now_ms=1_000)
    assert not guard.first_use(b"a", expires_ms=60_000, now_ms=59_000)  # still remembered
    assert guard.first_use(b"c", expires_ms=120_000, now_ms=61_000)  # room again once `a` expired
    assert not guard.first_use(b"b", expires_ms=90_000, now_ms=61_000)
