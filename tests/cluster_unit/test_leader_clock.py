"""The bound on leader-stamped time (`cluster/queues/leader_clock.py`, decision 0010), with injected
clocks."""

from __future__ import annotations

import itertools

from cluster.queues.leader_clock import LeaderClock
from queue_state.arguments import QueueConfig
from queue_state.commands import Enqueue, EntryMeta, NewMessage, Tick
from queue_state.machine import QueueMachine

HOUR_MS = 3_600_000
START_MS = 1_700_000_000_000


class Clocks:
    """A wall clock and a monotonic clock that the test moves; `skew_ms` is the wall clock's error."""

    def __init__(self) -> None:
        self.elapsed_ms = 0.0
        self.skew_ms = 0

    def wall(self) -> int:
        return START_MS + int(self.elapsed_ms) + self.skew_ms

    def monotonic(self) -> float:
        return 1000.0 + self.elapsed_ms

    def clock(self) -> LeaderClock:
        return LeaderClock(self.wall, self.monotonic)

    def run(self, clock: LeaderClock, ms: int, step_ms: int = 1) -> list[int]:
        """Stamp every `step_ms` for `ms` milliseconds."""
        stamps = []
        for _ in range(ms // step_ms):
            self.elapsed_ms += step_ms
            stamps.append(clock.stamp())
        return stamps


def test_steady_state_stamps_are_the_wall_clock() -> None:
    clocks = Clocks()
    clock = clocks.clock()
    assert clock.stamp() == clocks.wall()
    for step in (1, 7, 250, 1000):
        clocks.elapsed_ms += step
        assert clock.stamp() == clocks.wall()


def test_forward_jump_runs_at_the_monotonic_rate_and_expires_nothing_early() -> None:
    clocks = Clocks()
    clock = clocks.clock()
    machine = QueueMachine("q", QueueConfig(message_ttl=60_000))
    machine.apply(EntryMeta(clock.stamp()), Enqueue((NewMessage(1),)))
    clocks.skew_ms = HOUR_MS
    stamps = clocks.run(clock, 10_000, step_ms=100)
    assert stamps[-1] == START_MS + 10_000
    assert all(b - a == 100 for a, b in itertools.pairwise(stamps))
    machine.apply(EntryMeta(clock.stamp()), Tick())
    assert machine.stats().messages == 1
    clocks.skew_ms = 0  # healed: the wall clock is right again and the stamps follow it
    clocks.elapsed_ms += 5
    assert clock.stamp() == clocks.wall()
    clocks.elapsed_ms += 60_000
    machine.apply(EntryMeta(clock.stamp()), Tick())
    assert machine.stats().messages == 0  # the TTL still counts


def test_backward_jump_never_goes_back_and_at_worst_halves_the_rate() -> None:
    clocks = Clocks()
    clock = clocks.clock()
    before = clock.stamp()
    clocks.skew_ms = -600_000
    stamps = clocks.run(clock, 10_000)  # one stamp per millisecond: rounding must not freeze time
    assert stamps == sorted(stamps) and stamps[0] >= before
    assert stamps[-1] == before + 5_000
    clocks.skew_ms = 0
    clocks.elapsed_ms += 1
    assert clock.stamp() == before + 5_001  # the lag stays: never faster than the monotonic clock


def test_a_wall_clock_set_back_after_running_ahead_is_met_at_half_rate() -> None:
    clocks = Clocks()
    clocks.skew_ms = 20_000
    clock = clocks.clock()  # a new queue: the first stamp trusts the (wrong) wall clock
    assert clock.stamp() == START_MS + 20_000
    clocks.skew_ms = 0  # NTP steps it back
    stamps = clocks.run(clock, 40_000, step_ms=10)
    assert stamps[1999] == START_MS + 20_000 + 10_000  # half rate while ahead of the wall clock
    assert stamps[-1] == clocks.wall()  # met after 40 s, then the wall clock again


def test_new_leader_continues_from_the_log_not_from_its_wall_clock() -> None:
    old, new = Clocks(), Clocks()
    leader = old.clock()
    follower = new.clock()
    new.skew_ms = HOUR_MS
    for _ in range(5):
        old.elapsed_ms += 200
        new.elapsed_ms += 200
        follower.observe(leader.stamp())  # what the follower applies from the log
    last = leader.stamp()
    follower.observe(last)
    new.elapsed_ms += 1500  # the old leader dies; an election later the follower leads
    assert follower.stamp() == last + 1500
    follower.observe(last - 10_000)  # an older stamp applied late changes nothing
    new.elapsed_ms += 1
    assert follower.stamp() == last + 1501


def test_a_new_leader_whose_wall_clock_is_behind_does_not_freeze_time() -> None:
    clocks = Clocks()
    clocks.skew_ms = -HOUR_MS
    clock = clocks.clock()
    clock.observe(START_MS)
    stamps = clocks.run(clock, 2_000, step_ms=100)
    assert stamps[-1] == START_MS + 1_000
