"""The steady clock (expiry times other nodes check): deaf to a wall-clock step that does not hold, it
follows one watched holding, never going back."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cluster.steady_clock import READ_GAP_NS, STEP_HOLD_NS, STEP_TOLERANCE_NS, SteadyClock

EPOCH_NS = 1_790_000_000 * 10**9
SECOND_NS = 10**9
MINUTE_NS = 60 * SECOND_NS
HOUR_NS = 60 * MINUTE_NS


class Clocks:
    """A wall and a monotonic clock the test moves: `step` moves the wall clock alone (NTP, a resumed
    VM), `run` both, reading the steady clock every second as a server does (`watch`)."""

    def __init__(self) -> None:
        self.monotonic = 5 * SECOND_NS
        self.off = 0
        self.clock = SteadyClock(self.wall, lambda: self.monotonic)

    def wall(self) -> int:
        return EPOCH_NS + self.monotonic + self.off

    def step(self, ns: int) -> None:
        self.off += ns

    def run(self, ns: int, every: int = SECOND_NS) -> int:
        """Run `ns`, reading the clock every `every`: the last reading, in ns."""
        end = self.monotonic + ns
        reading = self.read()
        while self.monotonic < end:
            self.monotonic = min(end, self.monotonic + every)
            now = self.read()
            assert now >= reading, "the steady clock went back"
            reading = now
        return reading

    def read(self) -> int:
        return self.clock.now_ms() * 10**6

    def lag(self) -> int:
        """How far the steady clock is behind the wall clock now, in ns."""
        return self.wall() - self.read()


def test_a_step_that_does_not_hold_is_not_followed() -> None:
    """The clock nemesis's faults: an hour ahead then back, two minutes behind then set right, each just
    short of the hold, watched every second."""
    clocks = Clocks()
    for step in (HOUR_NS, -2 * MINUTE_NS):
        clocks.step(step)
        clocks.run(STEP_HOLD_NS - SECOND_NS)
        assert abs(clocks.lag() - step) <= 10**6
        clocks.step(-step)
        clocks.run(MINUTE_NS)
        assert abs(clocks.lag()) <= 10**6


def test_rule_a_node_started_before_its_clock_was_set_right_follows_it_once_it_held() -> None:
    """A node started ten minutes behind (before NTP synced), its clock set right after: it keeps its own
    time through the hold, then takes the wall clock's. Before this rule it lagged for good, and once the
    lag passed the assertions' 60 s its peers refused what it forwarded until it restarted."""
    clocks = Clocks()
    clocks.step(10 * MINUTE_NS)
    clocks.run(STEP_HOLD_NS - SECOND_NS)
    assert abs(clocks.lag() - 10 * MINUTE_NS) <= 10**6
    clocks.run(2 * SECOND_NS)
    assert abs(clocks.lag()) <= 10**6


def test_a_clock_set_back_is_met_at_half_rate() -> None:
    """A node started two minutes ahead, then set right: once the step held, its steady time runs at half
    the monotonic rate until it meets the wall clock (within the tolerance), never going back."""
    clocks = Clocks()
    clocks.step(-2 * MINUTE_NS)
    held = clocks.run(STEP_HOLD_NS)
    assert abs(clocks.lag() + 2 * MINUTE_NS) <= 10**6
    assert abs(clocks.run(MINUTE_NS) - held - MINUTE_NS // 2) <= 10**6
    clocks.run(3 * MINUTE_NS)
    assert abs(clocks.lag()) <= STEP_TOLERANCE_NS + 10**6


def test_a_wall_clock_that_moves_again_during_the_hold_starts_it_again() -> None:
    """Stepped, moved further, or back and stepped again: each new position must hold in full."""
    clocks = Clocks()
    clocks.step(HOUR_NS)
    clocks.run(STEP_HOLD_NS // 2)
    clocks.step(HOUR_NS)
    clocks.run(STEP_HOLD_NS - SECOND_NS)
    assert abs(clocks.lag() - 2 * HOUR_NS) <= 10**6
    clocks.step(-2 * HOUR_NS)
    clocks.run(SECOND_NS)
    clocks.step(2 * HOUR_NS)
    clocks.run(STEP_HOLD_NS - SECOND_NS)
    assert abs(clocks.lag() - 2 * HOUR_NS) <= 10**6
    clocks.run(2 * SECOND_NS)
    assert abs(clocks.lag()) <= 10**6


def test_a_hold_not_watched_is_not_counted() -> None:
    """Two readings a hold apart that see the same step prove nothing about the time between: the hold
    starts again at the second, and counts once watched through."""
    clocks = Clocks()
    clocks.step(HOUR_NS)
    clocks.read()
    clocks.monotonic += STEP_HOLD_NS + SECOND_NS
    assert abs(clocks.lag() - HOUR_NS) <= 10**6
    clocks.run(STEP_HOLD_NS - SECOND_NS)
    assert abs(clocks.lag() - HOUR_NS) <= 10**6
    clocks.run(2 * SECOND_NS, every=READ_GAP_NS // 4)
    assert abs(clocks.lag()) <= 10**6


@given(
    st.lists(
        st.tuples(
            st.integers(-24 * HOUR_NS, 24 * HOUR_NS),
            st.integers(0, 2 * STEP_HOLD_NS),
            st.sampled_from([SECOND_NS, READ_GAP_NS // 2, 2 * READ_GAP_NS]),
        ),
        max_size=12,
    )
)
def test_steady_time_never_goes_back_and_meets_a_wall_clock_that_holds(
    steps: list[tuple[int, int, int]],
) -> None:
    clocks = Clocks()
    for step, then, every in steps:
        clocks.step(step)
        clocks.run(then, every=every)
    ahead = max(0, -clocks.lag())  # what half rate must absorb, at most
    clocks.run(STEP_HOLD_NS + 2 * ahead + SECOND_NS, every=READ_GAP_NS)
    assert abs(clocks.lag()) <= STEP_TOLERANCE_NS + 10**6
