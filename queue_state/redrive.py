"""Redrive tasks: moving a dead-letter queue's messages back to where they came from (SQS's message move
task), as state of the queue they leave, so that a new leader resumes a task where the last one stopped.

A task takes the ready messages of its window, those that were in the queue when it started (ids
below `end_id`) and were enqueued from `since_ms` to `until_ms` (both inclusive; the start's time by
default), through a durable consumer of its own (`consumer`), whose delivery sequence numbers the
messages. Messages dead-lettered while it runs, such as those of a source that still fails, are not
taken again, so a task always ends. Every command of a running task names its `serial`, new to each
start, so the worker of an earlier task of the same name can neither take nor settle the new task's
messages. The node's redrive worker publishes each one to the task's
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
UNKNOWN_TASK = "unknown_task"
"""The failure code of a command naming a task that does not run (as that start of it)."""
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
    end_id: int
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

    def in_window(self, message_id: int, enqueued_at: int) -> bool:
        """Whether message `message_id`, enqueued at `enqueued_at`, is one the task moves."""
        since = self.since_ms is None or enqueued_at >= self.since_ms
        return since and enqueued_at <= self.until_ms and message_id < self.end_id

    def started_as(
        self, target: str | None, since_ms: int | None, until_ms: int | None, rate: int | None
    ) -> bool:
        """Whether a start with these settings asks for this task as it was started (its end left to the
        queue, or the same): starting it again changes nothing."""
        same = (target, since_ms, rate) == (self.target, self.since_ms, self.rate)
        return same and until_ms in (None, self.until_ms)

    def to_wire(self) -> list[Any]:
        return [
            self.task,
            self.serial,
            self.target,
            self.since_ms,
            self.until_ms,
            self.end_id,
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
