"""The redrive worker (`cluster/queues/redriving/worker.py`) against a real queue machine behind a fake door
and a fake publisher: it is bound to one start of its task, a message that cannot go anywhere fails the task
before any of its batch is published, and a worker waiting on a target stops when its task ends."""

from __future__ import annotations

import asyncio
from typing import Any

from support.eventually import eventually

from cluster.errors import UnknownConsumer
from cluster.queues.queue_results import MessageRow, Position
from cluster.queues.redriving.worker import RedriveWorker
from cluster.replication.stored_message import StoredMessage
from queue_state.arguments import parse_arguments
from queue_state.commands import (
    Command,
    EndRedrive,
    Enqueue,
    EntryMeta,
    NewMessage,
    RedriveCheckout,
    RedriveSettle,
    StartRedrive,
)
from queue_state.effects import DurablePosition, Failure
from queue_state.machine import QueueMachine
from queue_state.redrive import CANCELLED, RedriveTask

DEATH = {"x-death": [{"queue": "orders", "reason": "rejected", "count": 1, "time": 1}]}


class Door:
    """A queue's redrive methods over a real machine, applied at once (a one-node log)."""

    name = "dlq"
    group = "q1.dlq"
    is_leader = True

    def __init__(self, headers: list[dict[str, Any]]) -> None:
        self.machine = QueueMachine("dlq", parse_arguments({}))
        self.now = 1
        self.headers = {}
        self.apply(Enqueue(tuple(NewMessage(1) for _ in headers)))
        for message_id, message_headers in enumerate(headers, start=1):
            self.headers[message_id] = message_headers

    def apply(self, command: Command) -> Any:
        self.now += 1
        return self.machine.apply(EntryMeta(self.now), command)[0]

    def redrives(self) -> list[RedriveTask]:
        return self.machine.redrives()

    def redrive(self, task: str) -> RedriveTask | None:
        return next((t for t in self.redrives() if t.task == task), None)

    def durable_position(self, name: str) -> Position | None:
        found = [i for i in self.machine.durable_consumers() if i.name == name]
        return Position(name, found[0].settled, found[0].end, 0) if found else None

    def _position(self, task: str, reply: Any) -> Position:
        if isinstance(reply, Failure):
            raise UnknownConsumer(reply.reason)
        assert isinstance(reply, DurablePosition)
        return Position(task, reply.settled, reply.end, 0)

    async def redrive_checkout(self, task: str, serial: int, count: int) -> Position:
        return self._position(task, self.apply(RedriveCheckout(task, serial, count)))

    async def redrive_settle(self, task: str, serial: int, below: int) -> Position:
        return self._position(task, self.apply(RedriveSettle(task, serial, below)))

    async def read_durable_log(self, name: str, start: int, end: int) -> list[MessageRow]:
        return [
            MessageRow.of(d, StoredMessage(b"m", self.headers[d.id], "utf8"), seq)
            for seq, d in self.machine.durable_log(name, start, end)
        ]

    async def end_redrive(self, task: str, serial: int, state: str, reason: str | None = None) -> None:
        self.apply(EndRedrive(task, serial, state, reason))


class Publisher:
    """Records what is published; fails every publish while `failing`."""

    def __init__(self, failing: bool = False) -> None:
        self.failing = failing
        self.published: list[tuple[str, str, int]] = []
        self.attempts = 0

    async def publish_confirmed(
        self, target: str, messages: Any, publisher: Any, seq: Any, priorities: Any = None
    ) -> None:
        self.attempts += 1
        await asyncio.sleep(0)
        if self.failing:
            raise ConnectionError("target unreachable")
        self.published.append((target, publisher, seq))


def worker(door: Door, publisher: Publisher, serial: int = 1) -> RedriveWorker:
    return RedriveWorker(door, "t", serial, publisher, lambda queue: queue in ("orders", "other"))


async def test_a_task_moves_each_message_as_its_seq_and_completes() -> None:
    door = Door([DEATH, DEATH, DEATH])
    door.apply(StartRedrive("t"))
    publisher = Publisher()
    await worker(door, publisher).run()
    assert publisher.published == [("orders", "redrive:q1.dlq:1", seq) for seq in (1, 2, 3)]
    (task,) = door.redrives()
    assert (task.state, task.moved) == ("completed", 3)


async def test_rule_a_worker_of_an_earlier_start_moves_nothing_of_the_new_one() -> None:
    door = Door([DEATH, DEATH])
    door.apply(StartRedrive("t", "other"))
    door.apply(EndRedrive("t", 1, CANCELLED))
    door.apply(StartRedrive("t", "orders"))  # serial 2
    publisher = Publisher()
    await worker(door, publisher, serial=1).run()
    assert publisher.published == [] and door.redrives()[0].state == "running"
    assert door.machine.durable_consumers()[0].end == 0  # it numbered nothing for #2


async def test_rule_a_message_that_cannot_go_anywhere_fails_the_task_before_its_batch_is_published() -> None:
    door = Door([DEATH, {}, DEATH])  # the second names no queue it died in
    door.apply(StartRedrive("t"))
    publisher = Publisher()
    await worker(door, publisher).run()
    (task,) = door.redrives()
    assert task.state == "failed" and "names no queue" in (task.reason or "")
    assert publisher.attempts == 0
    assert [m.id for m in door.machine.ready_messages()] == [1, 2, 3]  # nothing lost


async def test_a_worker_waiting_on_an_unreachable_target_stops_when_its_task_is_cancelled() -> None:
    door = Door([DEATH, DEATH])
    door.apply(StartRedrive("t"))
    publisher = Publisher(failing=True)
    running = asyncio.ensure_future(worker(door, publisher).run())
    await eventually(lambda: publisher.attempts >= 2, "two attempts")
    door.apply(EndRedrive("t", 1, CANCELLED))
    await asyncio.wait_for(running, timeout=10)
    attempts = publisher.attempts
    for _ in range(20):  # let any publish left behind run, were there one
        await asyncio.sleep(0)
    assert publisher.attempts == attempts  # nothing goes on publishing alone
    assert sorted(m.id for m in door.machine.ready_messages()) == [1, 2]
