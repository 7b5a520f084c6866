"""Redrive tasks: moving a dead-letter queue's messages back to where they came from (SQS's message move
task), as state of the queue they leave, so that a new leader resumes a task where the last one stopped.

A task takes the ready messages enqueued in its window (`since_ms` to `until_ms`, both inclusive; the
end defaults to the time the task started, so messages dead-lettered while it runs, such as those of a
source that still fails, are not taken again) through a durable consumer of its own (`consumer`), whose
delivery sequence numbers the messages. The node's redrive worker publishes each one to the task's
target (or, without one, to the queue its `x-death` names) as publisher `publisher_id` with the
message's sequence number as its seq, and settles it once confirmed: a new leader's worker publishes
again what was not settled, and the target takes each (publisher, seq) once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

RUNNING = "running"
COMPLETED = "completed"
CANCELLED = "cancelled"
FAILED = "failed"
ENDED_STATES = (COMPLETED, CANCELLED, FAILED)
CONSUMER_PREFIX = "redrive:"
"""The names of the durable consumers of redrive tasks: a client's durable consumer may not take one."""
ENDED_KEPT = 16
"""How many ended tasks a queue keeps for their progress to be read (the oldest leaves first)."""


@dataclass(slots=True)
class RedriveTask:
    """One redrive task of a queue, and what it did once it ended (`moved` counts the messages it
    moved; while it runs, its consumer's settled count says)."""

    task: str
    serial: int
    target: str | None
    since_ms: int | None
    until_ms: int
    rate: int | None
    started_ms: int
    total: int
    state: str = RUNNING
    moved: int = 0
    ended_ms: int | None = None
    reason: str | None = None

    @property
    def consumer(self) -> str:
        """The name of the task's durable consumer."""
        return f"{CONSUMER_PREFIX}{self.task}"

    def publisher_id(self, group: str) -> str:
        """The publisher the task publishes as, unique to this task of the queue of Raft group `group`
        (a task started again under its name gets another serial, so a target never mistakes its
        messages for the earlier task's)."""
        return f"{CONSUMER_PREFIX}{group}:{self.serial}"

    def in_window(self, enqueued_at: int) -> bool:
        """Whether a message enqueued at `enqueued_at` is one the task moves."""
        return (self.since_ms is None or enqueued_at >= self.since_ms) and enqueued_at <= self.until_ms

    def to_wire(self) -> list[Any]:
        return [
            self.task,
            self.serial,
            self.target,
            self.since_ms,
            self.until_ms,
            self.rate,
            self.started_ms,
            self.total,
            self.state,
            self.moved,
            self.ended_ms,
            self.reason,
        ]

    @classmethod
    def of_wire(cls, row: list[Any]) -> RedriveTask:
        return cls(*row)
