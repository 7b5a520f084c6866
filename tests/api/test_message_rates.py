"""Message rates as RabbitMQ's management API gives them: counts since the leader began counting a
queue, and the growth per second over the last 30 s of samples."""

from __future__ import annotations

from api.message_rates import SAMPLE_S, MessageRates, summed_stats


class Clock:
    """Time that moves only when the test says (the rates read nothing else)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_rate_is_the_growth_since_the_oldest_sample_of_the_window() -> None:
    clock = Clock()
    rates = MessageRates(clock)
    rates.count("q", "publish", 50)  # the first count: a sample of nothing is taken at once
    clock.now += 10
    stats = rates.message_stats("q")
    assert (stats["publish"], stats["publish_details"]) == (50, {"rate": 5.0})
    for _ in range(12):  # a minute of samples, each with 10 more publishes per 5 s
        clock.now += SAMPLE_S
        rates.count("q", "publish", 10)
        rates.sample()
    stats = rates.message_stats("q")
    assert stats["publish"] == 170
    assert stats["publish_details"] == {"rate": 2.0}  # the last 30 s only
    assert stats["ack_details"] == {"rate": 0.0} and stats["ack"] == 0


def test_queues_no_longer_led_are_forgotten_and_read_as_zeros() -> None:
    rates = MessageRates(Clock())
    rates.count("q", "deliver_get", 3)
    rates.count("q", "redeliver", 1)
    rates.forget({"q"})
    assert rates.counted() == set()
    assert rates.message_stats("q")["deliver_get"] == 0


def test_the_overview_sums_counts_and_rates() -> None:
    first = {"publish": 3, "publish_details": {"rate": 1.5}}
    second = {"publish": 4, "publish_details": {"rate": 0.25}, "ack": 2, "ack_details": {"rate": 1.0}}
    summed = summed_stats([first, second, {}])
    assert (summed["publish"], summed["publish_details"], summed["ack"]) == (7, {"rate": 1.8}, 2)
    assert summed["redeliver_details"] == {"rate": 0.0}
