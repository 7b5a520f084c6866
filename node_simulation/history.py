"""What the simulated clients asked and were answered, and the checks on it that hold at every moment.

The checks after healing (nothing confirmed lost, replicas alike, every request answered) are the
simulation's (`NodeSimulation.heal_and_check`), since they read the nodes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


class Violation(AssertionError):
    """A promise of the queue was broken."""


@dataclass
class QueueHistory:
    """One queue, as its clients saw it. Bodies are unique per publish, so they name messages."""

    confirmed: dict[bytes, int] = field(default_factory=dict)  # body -> id of every confirmed message
    maybe: set[bytes] = field(default_factory=set)  # published, outcome unknown to the client
    ack_sent: set[bytes] = field(default_factory=set)  # manual deliveries the client sent an ack for
    auto_acked: Counter[bytes] = field(default_factory=Counter)  # handed out settled (no-ack, auto get)
    durable: dict[int, tuple[int, bytes]] = field(default_factory=dict)  # a durable log's seq -> (id, body)

    def published(self, bodies: list[bytes], ids: list[int]) -> None:
        """A publish answered 201 with `ids`: exactly one id for each message, and no id given before."""
        if len(ids) != len(bodies):
            raise Violation(f"a publish of {len(bodies)} messages was confirmed with ids {ids}")
        known = set(self.confirmed.values())
        for body, message_id in zip(bodies, ids, strict=True):
            previous = self.confirmed.get(body)
            if previous is not None and previous != message_id:
                raise Violation(f"{body!r} was confirmed as {previous} and again as {message_id}")
            if previous is None and message_id in known:
                raise Violation(f"id {message_id} confirmed for {body!r} was confirmed for another message")
            self.confirmed[body] = message_id
            self.maybe.discard(body)

    def auto_delivered(self, bodies: list[bytes]) -> None:
        """Messages handed out settled: each at most once, ever."""
        for body in bodies:
            self.auto_acked[body] += 1
            if self.auto_acked[body] > 1:
                raise Violation(f"{body!r} was delivered settled (auto-ack) {self.auto_acked[body]} times")

    def durable_read(self, rows: list[tuple[int, int, bytes]]) -> None:
        """A durable consumer's log read answered (seq, id, body) rows: a seq names one message, ever (a
        batch read again after a failure, on any leader, is the same batch)."""
        for seq, message_id, body in rows:
            before = self.durable.setdefault(seq, (message_id, body))
            if before != (message_id, body):
                raise Violation(f"durable seq {seq} read as {(message_id, body)!r}, before as {before!r}")
