"""The same commands give the same state and effects; a snapshot anywhere restores the same machine."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from queue_state_strategies import command_lists, configs

from queue_state.arguments import QueueConfig
from queue_state.commands import Checkout, Enqueue, EntryMeta, NewMessage
from queue_state.machine import QueueMachine
from queue_state.snapshot import SnapshotError


def state_bytes(machine: QueueMachine) -> bytes:
    return b"".join(machine.snapshot_chunks())


def run(machine: QueueMachine, commands) -> list:
    return [machine.apply(meta, cmd) for meta, cmd in commands]


@settings(max_examples=80, deadline=None)
@given(configs(), command_lists)
def test_the_same_commands_give_identical_state_replies_and_effects(config, commands) -> None:
    first, second = QueueMachine("q", config), QueueMachine("q", config)
    assert run(first, commands) == run(second, commands)
    assert state_bytes(first) == state_bytes(second)
    assert first.stats() == second.stats()
    assert first.next_deadline_ms() == second.next_deadline_ms()


@settings(max_examples=80, deadline=None)
@given(configs(), command_lists, st.data())
def test_snapshot_anywhere_then_restore_continues_identically(config, commands, data) -> None:
    cut = data.draw(st.integers(0, len(commands)))
    original = QueueMachine("q", config)
    run(original, commands[:cut])
    restored = QueueMachine.restore(original.snapshot_chunks())
    assert state_bytes(restored) == state_bytes(original)
    assert run(restored, commands[cut:]) == run(original, commands[cut:])
    assert state_bytes(restored) == state_bytes(original)
    assert restored.stats() == original.stats()
    assert restored.consumers() == original.consumers()
    assert restored.next_deadline_ms() == original.next_deadline_ms()


def test_snapshot_streams_ready_messages_in_bounded_chunks() -> None:
    machine = QueueMachine("q", QueueConfig())
    machine.apply(EntryMeta(0), Checkout("c", prefetch=3))
    for now in range(1, 1500):
        machine.apply(EntryMeta(now), Enqueue(tuple(NewMessage(now % 97) for _ in range(100)), "p", now))
    chunks = list(machine.snapshot_chunks())
    assert len(chunks) > 3
    assert max(len(chunk) for chunk in chunks) < 4 * 1024 * 1024
    restored = QueueMachine.restore(chunks)
    assert restored.stats() == machine.stats()
    assert list(restored.ready_messages())[-5:] == list(machine.ready_messages())[-5:]


def test_restore_rejects_a_truncated_or_foreign_snapshot() -> None:
    machine = QueueMachine("q", QueueConfig())
    chunks = list(machine.snapshot_chunks())
    with pytest.raises(SnapshotError):
        QueueMachine.restore(chunks[:-1])
    with pytest.raises(SnapshotError):
        QueueMachine.restore([b"\x93\x01\x02"])
    with pytest.raises(SnapshotError):
        QueueMachine.restore([])
