"""Run a function in a child forked from the test process (multiprocessing's fork start method)."""

from __future__ import annotations

import multiprocessing
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

CHILD_TIMEOUT_S = 30.0


class ChildFailed(AssertionError):
    """The forked child raised, died, or gave no answer in time."""


def run_forked(work: Callable[[], Any], timeout: float = CHILD_TIMEOUT_S) -> Any:
    """What `work()` returns when run in a forked child; its traceback as ChildFailed when it raises.

    A child that has not answered within `timeout` is killed and reported as hung."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_answer, args=(work, send), daemon=True)
    child.start()
    send.close()
    try:
        if not receive.poll(timeout):
            raise ChildFailed(f"the forked child gave no answer within {timeout} s: it hangs")
        try:
            succeeded, value = receive.recv()
        except EOFError:
            raise ChildFailed("the forked child died without an answer") from None
    finally:
        receive.close()
        child.join(timeout)
        if child.is_alive():
            child.kill()
            child.join()
    if not succeeded:
        raise ChildFailed("the forked child raised:\n" + value)
    return value


def _answer(work: Callable[[], Any], send: Connection) -> None:
    try:
        send.send((True, work()))
    except BaseException:
        send.send((False, traceback.format_exc()))
