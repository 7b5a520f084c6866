"""The worker of one redrive task, running beside the leader of the queue the task empties.

Batch by batch, it takes the messages the task's durable consumer holds unsettled (those a previous
leader's worker had taken and not finished), or numbers new ones of the task's window
(`redrive_checkout`); checks where each goes (the task's target, or the queue its newest `x-death`
entry names); publishes them concurrently as the task's publisher, each with its sequence number + 1 as
its seq, at most `rate` a second; and settles the batch once every publish was confirmed. A new
leader's worker publishes the unsettled ones again under the same (publisher, seq), which their target
takes once: a task moves each message once, whatever leader changes it goes through. When the window is
empty the task is completed; a message that names no queue, this queue itself or a queue that does not
exist fails the task before any of its batch is published (what the task holds goes back to the queue,
nothing is lost). A worker is bound to one start of its task (`serial`): it stops as soon as that task
no longer runs, even while it waits on a target.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from cluster.errors import NotLeader, UnknownConsumer
from cluster.queues.dead_lettering.messages import DEATHS, priorities_of
from cluster.queues.dead_lettering.worker import MAX_BACKOFF_S, MIN_BACKOFF_S, ConfirmedPublisher
from cluster.queues.queue_results import MessageRow, Position
from cluster.replication.stored_message import StoredMessage
from metadata_state.vhost_names import SEPARATOR, qualified, vhost_of
from queue_state.redrive import COMPLETED, FAILED, RUNNING, RedriveTask

log = logging.getLogger(__name__)

BATCH = 64
"""The most messages a worker takes, and publishes concurrently, at a time."""


class RedriveSource(Protocol):
    """What the worker needs of the queue its task empties: the redrive methods of its door."""

    @property
    def name(self) -> str: ...

    @property
    def group(self) -> str: ...

    @property
    def is_leader(self) -> bool: ...

    def redrives(self) -> list[RedriveTask]: ...

    def redrive(self, task: str) -> RedriveTask | None: ...

    def durable_position(self, name: str) -> Position | None: ...

    async def redrive_checkout(self, task: str, serial: int, count: int) -> Position: ...

    async def read_durable_log(self, name: str, start: int, end: int) -> list[MessageRow]: ...

    async def redrive_settle(self, task: str, serial: int, below: int) -> Position: ...

    async def end_redrive(self, task: str, serial: int, state: str, reason: str | None = None) -> None: ...


class TaskFailed(Exception):
    """A message the task cannot move: it ends, failed, with this reason."""


class TaskEnded(Exception):
    """The worker's task no longer runs here (ended, started again, or led elsewhere)."""


class RedriveWorker:
    """Moves the messages of one start of a redrive task (`task`, `serial`), until it ends or this node
    stops leading its queue. `declared(queue)` tells whether a queue exists."""

    def __init__(
        self,
        source: RedriveSource,
        task: str,
        serial: int,
        publisher: ConfirmedPublisher,
        declared: Callable[[str], bool],
    ) -> None:
        self.source = source
        self.task = task
        self.serial = serial
        self.publisher = publisher
        self._declared = declared
        self._next_batch_at = asyncio.get_running_loop().time()

    async def run(self) -> None:
        """Work until the task ends (or the dispatcher cancels the worker on a leadership change). An
        unexpected error is logged and the work goes on after a pause."""
        while True:
            try:
                if not await self._step():
                    return
            except asyncio.CancelledError:
                raise
            except (NotLeader, UnknownConsumer):  # no longer the leader, or the task ended meanwhile
                return
            except Exception:
                log.exception("queue %s: redrive task %s: error; going on", self.source.name, self.task)
                await asyncio.sleep(MAX_BACKOFF_S)

    def _running(self) -> RedriveTask | None:
        """The worker's task while it runs here as the worker's start of it."""
        task = self.source.redrive(self.task)
        if not self.source.is_leader or task is None or task.state != RUNNING or task.serial != self.serial:
            return None
        return task

    async def _step(self) -> bool:
        """Move one batch; False once the task ended."""
        task = self._running()
        position = None if task is None else self.source.durable_position(task.consumer)
        if task is None or position is None:
            return False
        if position.settled == position.end:
            position = await self.source.redrive_checkout(task.task, task.serial, self._batch_size(task))
            if position.settled == position.end:
                await self.source.end_redrive(task.task, task.serial, COMPLETED)
                log.info("queue %s: redrive task %s completed", self.source.name, task.task)
                return False
        rows = await self.source.read_durable_log(task.consumer, position.settled, position.end)
        try:
            targets = [self._target(task, row) for row in rows]
            await self._pace(task, len(rows))
            await self._publish_all(task, rows, targets)
        except TaskFailed as failure:
            log.warning("queue %s: redrive task %s failed: %s", self.source.name, task.task, failure)
            await self.source.end_redrive(task.task, task.serial, FAILED, str(failure))
            return False
        except TaskEnded:
            return False
        await self.source.redrive_settle(task.task, task.serial, position.end)
        return True

    async def _publish_all(self, task: RedriveTask, rows: list[MessageRow], targets: list[str]) -> None:
        """Publish a batch concurrently; the first failure stops the others (none goes on alone)."""
        pairs = zip(rows, targets, strict=True)
        moves = [asyncio.ensure_future(self._move(task, row, target)) for row, target in pairs]
        try:
            await asyncio.gather(*moves)
        finally:
            for move in moves:
                move.cancel()

    def _target(self, task: RedriveTask, row: MessageRow) -> str:
        """Where message `row` goes (the task's target, or the queue of the source's vhost its x-death
        names), or TaskFailed when it cannot go anywhere."""
        target = task.target or _source_queue(row.headers, vhost_of(self.source.name))
        if target is None:
            raise TaskFailed(
                f"message {row.id} names no queue of its vhost in x-death; redrive it with a target"
            )
        if target == self.source.name:
            raise TaskFailed(f"message {row.id} died in this queue itself; redrive it with a target")
        if not self._declared(target):
            raise TaskFailed(f"no queue '{target}' (the target of message {row.id})")
        return target

    def _batch_size(self, task: RedriveTask) -> int:
        return BATCH if task.rate is None else max(1, min(BATCH, task.rate))

    async def _pace(self, task: RedriveTask, count: int) -> None:
        """Wait so that the task moves at most `rate` messages a second (a batch's worth ahead)."""
        if task.rate is None:
            return
        now = asyncio.get_running_loop().time()
        if self._next_batch_at > now:
            await asyncio.sleep(self._next_batch_at - now)
        self._next_batch_at = max(now, self._next_batch_at) + count / task.rate

    async def _move(self, task: RedriveTask, row: MessageRow, target: str) -> None:
        """Publish one message to its target until confirmed, retrying with backoff (a full, leaderless
        or unreachable target keeps the task waiting) while the task runs here and its target exists."""
        assert row.seq is not None
        message = [(StoredMessage(bytes(row.body), row.headers, row.encoding), None)]
        priorities = priorities_of([row.priority])
        backoff = MIN_BACKOFF_S
        while True:
            try:
                await self.publisher.publish_confirmed(
                    target, message, task.publisher_id(self.source.group), row.seq + 1, priorities
                )
                return
            except Exception as exc:  # any failure: the message stays held, try again later
                log.info("queue %s: redrive of %d to %s failed: %s", self.source.name, row.id, target, exc)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)
            if self._running() is None:
                raise TaskEnded
            self._target(task, row)  # the target may have been deleted meanwhile


def _source_queue(headers: dict[str, Any], vhost: str) -> str | None:
    """The cluster's name of the queue of `vhost` a dead letter died in last (its newest `x-death`
    entry's, which names it within its vhost), if it names one; none for a name holding a `/` (a
    publisher may forge x-death: it never reaches another vhost's queue)."""
    deaths: Sequence[Any] = headers.get(DEATHS) or ()
    newest = deaths[0] if isinstance(deaths, list) and deaths else None
    queue = newest.get("queue") if isinstance(newest, dict) else None
    if not isinstance(queue, str) or not queue or SEPARATOR in queue:
        return None
    return qualified(vhost, queue)
