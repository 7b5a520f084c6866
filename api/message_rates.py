"""Message counts of the queues this node leads, and their rates, as RabbitMQ's management API gives them.

The handlers count where the work happens (a publish where it is confirmed, a delivery or get where it is
handed out, an ack where it is settled: on the queue's leader); `sample` keeps, every SAMPLE_S, the
totals of the last RATE_WINDOW_S, and a rate is the growth from the oldest of them to now, per second
(`*_details.rate`). Nothing is recomputed from the log: after a leader change a queue's counts start
again on its new leader, as RabbitMQ's management statistics do when a queue moves.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

KINDS = ("publish", "deliver_get", "ack", "redeliver")
"""What is counted, by RabbitMQ's names: confirmed publishes, deliveries and gets, acks, redeliveries
(deliveries of a message handed out before)."""
SAMPLE_S = 5.0
RATE_WINDOW_S = 30.0
_KEPT = int(RATE_WINDOW_S / SAMPLE_S) + 2


@dataclass
class _Counted:
    """One queue's totals of each kind, and the totals sampled over the last RATE_WINDOW_S."""

    totals: list[int]
    samples: deque[tuple[float, tuple[int, ...]]]


class MessageRates:
    """Per-queue totals of each kind, and the samples their rates are computed from."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._queues: dict[str, _Counted] = {}

    def count(self, queue: str, kind: str, amount: int = 1) -> None:
        """Add `amount` to `queue`'s total of `kind` (one of KINDS)."""
        if not amount:
            return
        counted = self._queues.get(queue)
        if counted is None:  # counted from now: its first sample is nothing yet
            nothing = [0] * len(KINDS)
            counted = self._queues[queue] = _Counted(nothing, deque([(self._clock(), tuple(nothing))], _KEPT))
        counted.totals[KINDS.index(kind)] += amount

    def sample(self) -> None:
        """Keep the totals of now (called every SAMPLE_S)."""
        now = self._clock()
        for counted in self._queues.values():
            counted.samples.append((now, tuple(counted.totals)))

    def forget(self, queues: set[str]) -> None:
        """Stop counting queues this node no longer leads (or that are gone)."""
        for queue in queues:
            self._queues.pop(queue, None)

    def counted(self) -> set[str]:
        """The queues counted here."""
        return set(self._queues)

    def message_stats(self, queue: str) -> dict[str, Any]:
        """`queue`'s counts and rates in RabbitMQ's shape: `{"publish": n, "publish_details": {"rate": r},
        ...}` (zeros for a queue not counted here)."""
        counted = self._queues.get(queue)
        totals = counted.totals if counted else [0] * len(KINDS)
        rates = self._rates(counted) if counted else [0.0] * len(KINDS)
        stats: dict[str, Any] = {}
        for kind, total, rate in zip(KINDS, totals, rates, strict=True):
            stats[kind] = total
            stats[f"{kind}_details"] = {"rate": rate}
        return stats

    def _rates(self, counted: _Counted) -> list[float]:
        """Per second, from the oldest sample within RATE_WINDOW_S (or the newest kept) to now, over at
        least SAMPLE_S."""
        now, samples = self._clock(), counted.samples
        since, before = next(
            ((at, counts) for at, counts in samples if now - at <= RATE_WINDOW_S), samples[-1]
        )
        elapsed = max(now - since, SAMPLE_S)  # a burst just after the first count is no rate of thousands
        return [round((total - old) / elapsed, 1) for total, old in zip(counted.totals, before, strict=True)]


def summed_stats(all_stats: list[dict[str, Any]]) -> dict[str, Any]:
    """The sum of several `message_stats` answers (counts and rates), as `/api/overview` gives them."""
    summed: dict[str, Any] = {}
    for kind in KINDS:
        summed[kind] = sum(int(stats.get(kind, 0)) for stats in all_stats)
        rate = sum(float(stats.get(f"{kind}_details", {}).get("rate", 0.0)) for stats in all_stats)
        summed[f"{kind}_details"] = {"rate": round(rate, 1)}
    return summed


async def keep_sampling(rates: MessageRates, leading: Callable[[], set[str]]) -> None:
    """Sample `rates` every SAMPLE_S for ever, forgetting the queues this node no longer leads."""
    while True:
        await asyncio.sleep(SAMPLE_S)  # the sampling period, not a wait for something to happen
        rates.forget(rates.counted() - leading())
        rates.sample()
