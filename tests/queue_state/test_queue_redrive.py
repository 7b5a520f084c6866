"""Redrive tasks in the queue machine (issue 22, feature 7): a window of messages (by default those
there when the task started) taken through the task's durable consumer, settled as they are moved,
one task at a time, idempotent to start again, ended with what it holds returned, and kept by a
snapshot of version 8."""

from __future__ import annotations

import msgpack
from queue_state_helpers import enqueue, make_machine

from queue_state.commands import (
    Cancel,
    DurableCheckout,
    DurableSettle,
    EndRedrive,
    EntryMeta,
    RedriveCheckout,
    RedriveSettle,
    StartRedrive,
)
from queue_state.effects import DurablePosition, Failure, Ok
from queue_state.machine import QueueMachine
from queue_state.redrive import CANCELLED, COMPLETED, RUNNING


def checkout(m: QueueMachine, now: int, count: int, task: str = "t", serial: int = 1) -> DurablePosition:
    reply, _ = m.apply(EntryMeta(now), RedriveCheckout(task, serial, count))
    assert isinstance(reply, DurablePosition), reply
    return reply


def taken_ids(m: QueueMachine, task: str = "t") -> list[int]:
    """The ids the task's consumer holds, in its sequence."""
    (durable,) = m.durable_consumers()
    return [delivery.id for _, delivery in m.durable_log(f"redrive:{task}", durable.settled, durable.end)]


def test_rule_a_task_moves_only_the_messages_of_its_window() -> None:
    m = make_machine()
    enqueue(m, 10, count=2)  # ids 1, 2
    enqueue(m, 20, count=2)  # ids 3, 4
    assert m.apply(EntryMeta(30), StartRedrive("t", "orders", since_ms=20))[0] == Ok()
    enqueue(m, 40)  # id 5: dead-lettered after the start, not taken (a source that still fails)
    (task,) = m.redrives()
    assert (task.state, task.total, task.until_ms, task.moved) == (RUNNING, 2, 30, 0)
    assert checkout(m, 41, 10) == DurablePosition(0, 2, 20)
    assert taken_ids(m) == [3, 4]
    assert checkout(m, 42, 10).end == 2  # nothing more in the window
    m.apply(EntryMeta(43), RedriveSettle("t", 1, 1))
    assert m.redrives()[0].moved == 1
    refused, _ = m.apply(EntryMeta(44), EndRedrive("t", 1, COMPLETED))
    assert isinstance(refused, Failure) and refused.code == "redrive_busy"
    m.apply(EntryMeta(45), RedriveSettle("t", 1, 2))
    assert m.apply(EntryMeta(46), EndRedrive("t", 1, COMPLETED))[0] == Ok()
    (task,) = m.redrives()
    assert (task.state, task.moved, task.ended_ms) == (COMPLETED, 2, 46)
    assert [r.id for r in m.ready_messages()] == [1, 2, 5]
    assert m.durable_consumers() == []


def test_rule_one_task_runs_at_a_time_and_starting_it_again_changes_nothing() -> None:
    m = make_machine()
    enqueue(m, 1, count=3)
    assert m.apply(EntryMeta(5), StartRedrive("t", None, None, None, 10))[0] == Ok()
    assert m.apply(EntryMeta(9), StartRedrive("t", None, None, None, 10))[0] == Ok()  # a retry
    assert m.apply(EntryMeta(9), StartRedrive("t", None, None, 5, 10))[0] == Ok()
    for other in (StartRedrive("t", "x"), StartRedrive("u")):
        refused, _ = m.apply(EntryMeta(9), other)
        assert isinstance(refused, Failure) and refused.code == "redrive_running"
    assert [(t.task, t.until_ms, t.serial) for t in m.redrives()] == [("t", 5, 1)]
    refused, _ = m.apply(EntryMeta(9), StartRedrive("x", "q"))
    assert isinstance(refused, Failure)  # one task at a time, and never into itself


def test_rule_a_cancelled_task_returns_what_it_holds_as_plain_returns() -> None:
    m = make_machine()
    enqueue(m, 1, count=3)
    m.apply(EntryMeta(2), StartRedrive("t"))
    checkout(m, 3, 2)
    for refused_command in (
        Cancel("redrive:t"),
        DurableCheckout("redrive:t", 5),
        DurableSettle("redrive:t", 2),
    ):
        refused, _ = m.apply(EntryMeta(4), refused_command)  # a client cannot take or settle them
        assert isinstance(refused, Failure) and refused.code == "name_in_use"
    m.apply(EntryMeta(5), RedriveSettle("t", 1, 1))
    assert m.apply(EntryMeta(6), EndRedrive("t", 1, CANCELLED, "asked"))[0] == Ok()
    ready = list(m.ready_messages())
    assert [(r.id, r.delivery_count, r.acquired) for r in ready] == [(3, 0, 0), (2, 0, 1)]  # to the tail
    (task,) = m.redrives()
    assert (task.state, task.moved, task.reason) == (CANCELLED, 1, "asked")
    assert m.apply(EntryMeta(7), EndRedrive("t", 1, COMPLETED))[0] == Ok()  # ended already: nothing changes
    assert m.apply(EntryMeta(8), StartRedrive("t"))[0] == Ok()  # the same start again (a retry)
    assert [(t.serial, t.state) for t in m.redrives()] == [(1, CANCELLED)]
    assert m.apply(EntryMeta(8), StartRedrive("t", rate=5))[0] == Ok()  # the name, other settings: new
    assert [(t.serial, t.state, t.total) for t in m.redrives()] == [(2, RUNNING, 2)]
    assert m.redrives()[0].publisher_id("q1.q") != task.publisher_id("q1.q")


def test_a_snapshot_keeps_the_tasks_and_what_they_hold_in_version_8() -> None:
    m = make_machine()
    assert msgpack.unpackb(next(iter(m.snapshot_chunks())))["version"] < 8
    enqueue(m, 1, count=4)
    m.apply(EntryMeta(2), StartRedrive("t", "orders", None, None, 100))
    checkout(m, 3, 3)
    m.apply(EntryMeta(4), RedriveSettle("t", 1, 1))
    chunks = list(m.snapshot_chunks())
    assert msgpack.unpackb(chunks[0])["version"] == 8
    restored = QueueMachine.restore(chunks)
    assert restored.redrives() == m.redrives()
    assert taken_ids(restored) == [2, 3]
    assert list(restored.snapshot_chunks()) == chunks


def test_rule_a_worker_of_an_earlier_task_of_the_same_name_can_neither_take_nor_settle() -> None:
    """A worker that read task t #1 and has not applied its end and a new start (#2) names #1: the
    machine refuses it, so it cannot number #2's messages nor settle them as its own."""
    m = make_machine()
    enqueue(m, 1, count=4)
    m.apply(EntryMeta(2), StartRedrive("t", "a"))
    m.apply(EntryMeta(3), EndRedrive("t", 1, CANCELLED))
    m.apply(EntryMeta(4), StartRedrive("t", "b"))
    assert checkout(m, 5, 2, serial=2).end == 2
    for stale in (RedriveCheckout("t", 1, 2), RedriveSettle("t", 1, 2)):
        refused, _ = m.apply(EntryMeta(6), stale)
        assert isinstance(refused, Failure) and refused.code == "unknown_task"
    assert m.apply(EntryMeta(7), EndRedrive("t", 1, COMPLETED))[0] == Ok()  # #1 ended: nothing changes
    assert [(t.serial, t.state, t.moved) for t in m.redrives()] == [(2, RUNNING, 0)]
    assert taken_ids(m) == [1, 2]


def test_rule_the_window_ends_at_the_messages_there_when_the_task_started() -> None:
    """Even a window whose end lies ahead (or a queue clock held back) takes no message dead-lettered
    after the start: a source that keeps failing cannot keep a task going."""
    m = make_machine()
    enqueue(m, 5, count=2)
    m.apply(EntryMeta(5), StartRedrive("t", "src", until_ms=10_000))
    enqueue(m, 5, count=2)  # ids 3 and 4, at the start's very time and inside until
    assert m.redrives()[0].total == 2
    assert checkout(m, 6, 10).end == 2 and taken_ids(m) == [1, 2]
