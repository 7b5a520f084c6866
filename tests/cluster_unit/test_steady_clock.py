"""The steady clock (expiry times other nodes check): deaf to a wall-clock step that does not hold, it
follows one that holds, never going back."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cluster.steady_clock import STEP_HOLD_NS, STEP_TOLERANCE_NS, SteadyClock

EPOCH_NS = 1_790_000_000 * 10**9
MINUTE_NS = 60 * 10**9


class Clocks:
    """A wall and a monotonic clock the test moves: `step` moves the wall clock alone (NTP, a resumed
    VM), `run` both."""

    def __init__(self) -> None:
        self.monotonic = 5 * 10**9
        self.off = 0

    def wall(self) -> int:
        return EPOCH_NS + self.monotonic + self.off

    def run(self, ns: int) -> None:
        self.monotonic += ns

    def step(self, ns: int) -> None:
        self.off += ns


def started() -> tuple[Clocks, SteadyClock]:
    clocks = Clocks()
    return clocks, SteadyClock(clocks.wall, lambda: clocks.monotonic)


def test_a_step_that_does_not_hold_is_not_followed() -> None:
    """The clock nemesis's faults: an hour ahead then back, minutes behind then set right."""
    clocks, clock = started()
    for step in (3600 * 10**9, -120 * 10**9):
        before = clock.now_ms()
        clocks.step(step)
        clocks.run(STEP_HOLD_NS - MINUTE_NS)
        assert clock.now_ms() - before == (STEP_HOLD_NS - MINUTE_NS) // 10**6
        clocks.step(-step)
        clocks.run(MINUTE_NS)
        assert abs(clock.now_ms() * 10**6 - clocks.wall()) <= 10**6


def test_rule_a_node_started_before_its_clock_was_set_right_follows_it_once_it_held() -> None:
    """A node started ten minutes behind (before NTP synced), its clock set right after: it first keeps
    its own time, then takes the wall clock's once the step held. Before this rule it lagged for good,
    and once the lag passed the assertions' 60 s its peers refused what it forwarded until it restarted."""
    clocks, clock = started()
    clocks.step(10 * MINUTE_NS)
    clocks.run(10**9)
    assert clock.now_ms() * 10**6 == clocks.wall() - 10 * MINUTE_NS
    clocks.run(STEP_HOLD_NS)
    assert clock.now_ms() * 10**6 == clocks.wall()


def test_a_clock_set_back_is_met_at_half_rate() -> None:
    """A node started two minutes ahead, then set right: once the step held, its steady time runs at half
    the monotonic rate until it meets the wall clock, never going back."""
    clocks, clock = started()
    clocks.step(-2 * MINUTE_NS)
    clock.now_ms()
    clocks.run(STEP_HOLD_NS)
    held = clock.now_ms()
    assert held * 10**6 == clocks.wall() + 2 * MINUTE_NS
    clocks.run(MINUTE_NS)
    assert clock.now_ms() - held == MINUTE_NS // 2 // 10**6
    clocks.run(3 * MINUTE_NS)
    assert abs(clock.now_ms() * 10**6 - clocks.wall()) <= STEP_TOLERANCE_NS


@given(
    st.lists(
        st.tuples(
            st.integers(-24 * 3600 * 10**9, 24 * 3600 * 10**9),
            st.integers(0, 2 * STEP_HOLD_NS),
            st.integers(1, 5),
        ),
        max_size=30,
    )
)
def test_steady_time_never_goes_back_and_meets_a_wall_clock_that_holds(
    steps: list[tuple[int, int, int]],
) -> None:
    clocks, clock = started()
    last = clock.now_ms()
    for step, then, reads in steps:
        clocks.step(step)
        for _ in range(reads):
            clocks.run(then // reads)
            now = clock.now_ms()
            assert now >= last
            last = now
    behind = max(0, last * 10**6 - clocks.wall())  # what half rate must absorb, at most
    for _ in range(4):
        clocks.run(STEP_HOLD_NS + 2 * behind)
        clock.now_ms()
    assert abs(clock.now_ms() * 10**6 - clocks.wall()) <= STEP_TOLERANCE_NS
