"""Fault schedules: reproducible from the seed, one fault at a time, healed before the workload ends."""

from __future__ import annotations

import itertools

import pytest

from jepsen_tests.nemesis import NEMESES, nemeses_named
from jepsen_tests.runner import RunConfig
from jepsen_tests.schedule import SETTLE_S, plan_schedule

FAMILIES = RunConfig.nemeses  # every family is a default one


def test_same_seed_gives_the_same_schedule_and_other_seeds_differ() -> None:
    assert plan_schedule(42, 60, FAMILIES) == plan_schedule(42, 60, FAMILIES)
    assert plan_schedule(42, 60, FAMILIES) != plan_schedule(43, 60, FAMILIES)


@pytest.mark.parametrize("seed", range(20))
def test_windows_do_not_overlap_and_end_before_the_settle_time(seed: int) -> None:
    windows = plan_schedule(seed, 30, FAMILIES)
    assert windows
    for earlier, later in itertools.pairwise(windows):
        assert earlier.end < later.start
    assert all(0 < w.start < w.end <= 30 - SETTLE_S for w in windows)


def test_only_the_chosen_families_are_scheduled() -> None:
    windows = plan_schedule(7, 300, ("pause",))
    assert {w.nemesis for w in windows} == {"pause"}
    assert plan_schedule(7, 300, ()) == []


def test_a_window_draws_the_same_choices_from_the_same_seed() -> None:
    window = plan_schedule(5, 60, FAMILIES)[0]
    assert window.rng(5).random() == window.rng(5).random()
    assert window.rng(5).random() != window.rng(6).random()


def test_unknown_nemesis_is_refused_with_the_known_names() -> None:
    with pytest.raises(ValueError, match="known: " + ", ".join(FAMILIES)):
        nemeses_named(["partition", "flood"])
    assert [n.name for n in nemeses_named(list(FAMILIES))] == list(NEMESES)
