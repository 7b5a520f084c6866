"""The test process dates the node assertions it makes by the wall clock, not by its steady clock.

Each node dates assertions by its steady clock, anchored to the wall clock when it started, and refuses
those made before it started (they could have been used before a restart). The test process runs for the
whole suite: after a step of the wall clock (on CI's machine it moved ahead of the monotonic clock during
one run), its steady clock lags every node started since by the step until it follows the step (minutes
later), and each such node refused its assertions as made before the node started meanwhile.
"""

from __future__ import annotations

import time

import pytest
from security_helpers import harness_assertion, wall_ms

from cli.node_processes import HARNESS_SECRET
from cluster import steady_clock
from cluster.security.peer_auth import body_digest, verify_assertion
from cluster.security.replay_guard import ReplayGuard

STEP_MS = 30_000


def test_harness_assertions_are_accepted_by_a_node_started_after_a_clock_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lagging = steady_clock.SteadyClock(wall_ns=lambda: time.time_ns() - STEP_MS * 10**6)
    monkeypatch.setattr(steady_clock, "_CLOCK", lagging)  # started before the wall clock stepped ahead
    started_ms = wall_ms()  # a node started now, after the test process's clock stepped
    guard = ReplayGuard(since_ms=started_ms)
    value = harness_assertion("@node", "GET", "/api/whoami", body_digest(b""), to="node1")
    asserted = verify_assertion(HARNESS_SECRET, value, "GET", "/api/whoami", started_ms, node="node1")
    assert asserted is not None
    assert guard.first_use(asserted.nonce, asserted.expires_ms, started_ms, by=asserted.user)
