"""LoopThread: an asyncio event loop run by a daemon thread, on which blocking callers run coroutines."""

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

from quorumq.errors import CallTimeoutError

T = TypeVar("T")


class LoopThread:
    """An event loop running in a daemon thread from construction until `stop()`.

    The constructor returns once the loop runs, so a process forked at any later time inherits a loop
    that counts as running: a child never closes it (closing would unregister the loop's wake-up pipe from
    the epoll instance it shares with the parent)."""

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        running = threading.Event()
        self._loop.call_soon(running.set)
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()
        running.wait()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float, call: str) -> T:
        """Run `coroutine` on the loop and return its result. Past `timeout` seconds it is cancelled and
        CallTimeoutError names the `call`; the caller's own interruption cancels it too."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            if future.done():
                raise  # the coroutine's own error, not this deadline
            raise CallTimeoutError(call, timeout) from None
        finally:
            future.cancel()

    def close(self, final: Coroutine[Any, Any, None], timeout: float, call: str) -> None:
        """Run `final` on the loop, then stop it: both together within `timeout` seconds (past it,
        CallTimeoutError names the `call`)."""
        deadline = time.monotonic() + timeout
        try:
            self.run(final, timeout, call)
        finally:
            self.stop(max(0.0, deadline - time.monotonic()))

    def stop(self, timeout: float) -> None:
        """Stop the loop and, once its thread has ended (within `timeout`), close it."""
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self._loop.close()
