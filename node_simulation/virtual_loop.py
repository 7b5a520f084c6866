"""An asyncio event loop on virtual time, with no selector, no sockets and no threads.

When no callback is ready the clock jumps to the next timer, so a run that would take minutes of real
time takes as long as its callbacks do, and one seed gives one order of callbacks (FIFO over what came
before). Code runs on behalf of a `Process` (the context variable `process`, inherited by every task
and callback that code schedules); once a process is killed, nothing scheduled on its behalf runs
again — not a `finally`, not a timer — as after a SIGKILL.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(eq=False)
class Process:
    """One run of one node's code, from start to its end (a crash, a power loss, a clean stop).

    It holds its tasks: once it is killed they stay pending, and must not be collected before the run
    ends, or the collector would run their `finally` blocks on behalf of whatever runs at that moment."""

    name: str
    alive: bool = True
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)

    def kill(self) -> None:
        """End the process: nothing of it runs again. A coroutine of its that never started is closed
        (it has nothing to unwind, and collected unstarted it would warn that it was never awaited)."""
        self.alive = False
        for task in self.tasks:
            coro = task.get_coro()
            if inspect.iscoroutine(coro) and inspect.getcoroutinestate(coro) == inspect.CORO_CREATED:
                coro.close()

    def hold(self, task: asyncio.Task[Any]) -> None:
        if len(self.tasks) > 1024 and self.alive:
            self.tasks = [t for t in self.tasks if not t.done()]
        self.tasks.append(task)


process: contextvars.ContextVar[Process | None] = contextvars.ContextVar("process", default=None)


class Quiescent(Exception):
    """Nothing is ready and nothing is scheduled, yet the run was not finished."""


class Overran(Exception):
    """The run took longer in real time than it was allowed (a watchdog: it never steers a run)."""


class _NoSelector:
    """Stands where `BaseEventLoop._run_once` asks a selector to wait: waiting is jumping ahead."""

    def __init__(self, loop: VirtualLoop) -> None:
        self._loop = loop

    def select(self, timeout: float | None) -> list[Any]:
        self._loop.check_real_time()
        if timeout is None:
            raise Quiescent("no callback is ready and no timer is scheduled")
        if timeout > 0:
            self._loop.advance(timeout)
        return []

    def close(self) -> None:
        pass


def _run_if_alive(callback: Callable[..., object], *args: Any) -> None:
    running = process.get()
    if running is None or running.alive:
        callback(*args)


def _held_task(
    loop: asyncio.AbstractEventLoop, coro: Any, *, context: contextvars.Context | None = None, **kwargs: Any
) -> asyncio.Task[Any]:
    """A task, held by the process it runs for."""
    task = asyncio.Task(coro, loop=loop, context=context, **kwargs)
    running = context.get(process) if context is not None else process.get()
    if running is not None:
        running.hold(task)
    return task


class VirtualLoop(asyncio.BaseEventLoop):
    """The loop of a simulation: `time()` is virtual and starts at 0."""

    def __init__(self) -> None:
        super().__init__()
        self._now = 0.0
        self._real_deadline: float | None = None
        self._selector = _NoSelector(self)
        self.set_task_factory(_held_task)

    def time(self) -> float:
        return self._now

    def limit_real_time(self, seconds: float) -> None:
        """Raise Overran out of the run once it has taken `seconds` of real time from now: a run that
        never ends (its virtual time going on, or not) fails by name instead of stalling its caller."""
        self._real_deadline = time.monotonic() + seconds

    def check_real_time(self) -> None:
        """Overran when past the real-time limit."""
        if self._real_deadline is not None and time.monotonic() > self._real_deadline:
            raise Overran(f"still running after its limit of real time, at {self._now:.3f} virtual s")

    def advance(self, seconds: float) -> None:
        """Move the clock forward (what waiting for the next timer is)."""
        self._now += seconds

    def call_soon(  # type: ignore[override]
        self, callback: Callable[..., object], *args: Any, context: contextvars.Context | None = None
    ) -> asyncio.Handle:
        if self.is_closed():  # a coroutine of a killed process collected after the run: it runs no more
            return asyncio.Handle(callback, args, self, context)
        return super().call_soon(_run_if_alive, callback, *args, context=context)

    def call_at(  # type: ignore[override]
        self,
        when: float,
        callback: Callable[..., object],
        *args: Any,
        context: contextvars.Context | None = None,
    ) -> asyncio.TimerHandle:
        if self.is_closed():  # as in call_soon
            return asyncio.TimerHandle(when, callback, args, self, context)
        return super().call_at(when, _run_if_alive, callback, *args, context=context)

    def run_in_executor(  # type: ignore[override]
        self, executor: Executor | None, func: Callable[..., T], *args: Any
    ) -> asyncio.Future[T]:
        """The call, run now on this thread: no other thread ever runs in a simulation."""
        future: asyncio.Future[T] = self.create_future()
        try:
            future.set_result(func(*args))
        except Exception as exc:  # handed to the awaiting caller, as an executor does
            future.set_exception(exc)
        return future

    # -- what BaseEventLoop leaves to a subclass ----------------------------------------------------

    def _process_events(self, event_list: list[Any]) -> None:
        pass

    def _write_to_self(self) -> None:
        pass
