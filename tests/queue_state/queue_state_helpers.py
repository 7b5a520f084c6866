"""Small helpers shared by the queue_state tests: building machines and reading effects."""

from __future__ import annotations

from typing import Any

from queue_state.arguments import parse_arguments
from queue_state.commands import Enqueue, EntryMeta, NewMessage
from queue_state.effects import DeadLetter, Deliver, Effect, ForgetBodies
from queue_state.machine import QueueMachine


def make_machine(**arguments: Any) -> QueueMachine:
    """A machine for queue arguments given as keywords: max_length=3 means x-max-length=3."""
    return QueueMachine("q", parse_arguments({"x-" + k.replace("_", "-"): v for k, v in arguments.items()}))


def enqueue(machine: QueueMachine, now_ms: int, count: int = 1, size: int = 10, **kwargs: Any):
    """Publish `count` messages of `size` bytes; return (reply, effects)."""
    return machine.apply(EntryMeta(now_ms), Enqueue(tuple(NewMessage(size) for _ in range(count)), **kwargs))


def delivered(effects: list[Effect], consumer: str | None = None) -> list[int]:
    """Ids handed out by Deliver effects (to `consumer`, or to anyone)."""
    return [
        d.id
        for e in effects
        if isinstance(e, Deliver) and (consumer is None or e.consumer == consumer)
        for d in e.deliveries
    ]


def dead_lettered(effects: list[Effect], reason: str | None = None) -> list[int]:
    """Ids in DeadLetter effects (for `reason`, or any)."""
    return [
        d.id
        for e in effects
        if isinstance(e, DeadLetter) and (reason is None or e.reason == reason)
        for d in e.deliveries
    ]


def forgotten(effects: list[Effect]) -> list[int]:
    return [i for e in effects if isinstance(e, ForgetBodies) for i in e.ids]
