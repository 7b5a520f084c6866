"""`x-dequeue-window` (rsyslog's dequeue time frame, to the minute): the form it takes, when it is open
(wrapping past midnight) and when it next opens."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from queue_state.dequeue_window import DAY_MS, MINUTE_MS, DequeueWindow

HOUR_MS = 60 * MINUTE_MS
DAY_2 = 2 * DAY_MS  # some midnight, UTC


def test_a_window_is_open_from_its_first_minute_to_before_its_last() -> None:
    window = DequeueWindow.parse("09:30-17:00")
    assert (window.opens_ms, window.closes_ms) == (9 * HOUR_MS + 30 * MINUTE_MS, 17 * HOUR_MS)
    assert not window.is_open(DAY_2 + 9 * HOUR_MS + 30 * MINUTE_MS - 1)
    assert window.is_open(DAY_2 + 9 * HOUR_MS + 30 * MINUTE_MS)
    assert window.is_open(DAY_2 + 17 * HOUR_MS - 1)
    assert not window.is_open(DAY_2 + 17 * HOUR_MS)


def test_a_window_wraps_past_midnight_when_it_closes_earlier_than_it_opens() -> None:
    window = DequeueWindow.parse("22:00-06:00")
    assert window.is_open(DAY_2 + 23 * HOUR_MS)
    assert window.is_open(DAY_2)
    assert window.is_open(DAY_2 + 6 * HOUR_MS - 1)
    assert not window.is_open(DAY_2 + 6 * HOUR_MS)
    assert not window.is_open(DAY_2 + 22 * HOUR_MS - 1)
    assert DequeueWindow.parse("18:00-00:00").is_open(DAY_2 - 1)  # to midnight


def test_a_closed_window_next_opens_today_or_tomorrow() -> None:
    window = DequeueWindow.parse("22:00-06:00")
    assert window.next_open_ms(DAY_2 + 7 * HOUR_MS) == DAY_2 + 22 * HOUR_MS
    assert window.next_open_ms(DAY_2 + 23 * HOUR_MS) == DAY_2 + 23 * HOUR_MS  # open: now
    morning = DequeueWindow.parse("01:00-02:00")
    assert morning.next_open_ms(DAY_2 + 3 * HOUR_MS) == DAY_2 + DAY_MS + HOUR_MS


@pytest.mark.parametrize(
    "text", ["", "9:00-17:00", "09:00-17", "24:00-01:00", "09:60-10:00", "09:00 - 17:00", "09:00-09:00"]
)
def test_any_other_form_or_an_empty_window_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        DequeueWindow.parse(text)


@given(
    opens=st.integers(0, 24 * 60 - 1),
    closes=st.integers(0, 24 * 60 - 1),
    now=st.integers(0, 10 * DAY_MS),
)
def test_the_next_opening_is_open_and_nothing_before_it_is(opens: int, closes: int, now: int) -> None:
    assume(opens != closes)
    window = DequeueWindow(opens * MINUTE_MS, closes * MINUTE_MS)
    found = window.next_open_ms(now)
    assert now <= found < now + DAY_MS
    assert window.is_open(found)
    if found > now:
        assert not window.is_open(found - 1)
        assert not window.is_open(now)


def test_rule_a_window_s_text_is_parsed_once() -> None:
    """Every apply and leader timer asks a paced queue's window: its text is parsed only the first time."""
    assert DequeueWindow.parse("21:07-03:09") is DequeueWindow.parse("21:07-03:09")
