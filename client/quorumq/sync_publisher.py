"""SyncPublisher: a pipelined Publisher driven from blocking code."""

import asyncio
import concurrent.futures
import functools
from collections.abc import Coroutine, Sequence
from types import TracebackType
from typing import Any, Protocol, Self, TypeVar

from quorumq.fork import ProcessOwner
from quorumq.messages import Publishable
from quorumq.publisher import Publisher

T = TypeVar("T")


class Runner(Protocol):
    """Runs a coroutine on a SyncClient's loop under the call's name, within its call_timeout."""

    def __call__(self, coroutine: Coroutine[Any, Any, T], name: str, /) -> T: ...


class SyncPublisher:
    """A Publisher (quorumq.publisher) whose methods block, from `SyncClient.publisher(queue)`.

    `send` returns a concurrent Future of the message's id and waits only while the publisher's window
    is full (`send_all` does so for many messages in one call); `flush()` waits for every confirm and
    raises the first failure. Leaving `with` flushes and closes it, or, when the block raises, aborts it
    (what is unconfirmed is cancelled, though it may still be enqueued) and lets the exception through.

    It runs on the loop thread of the process that made it: in a forked child every method raises
    ForkedClientError at once (make the child's publisher from the SyncClient, in the child).
    """

    def __init__(self, publisher: Publisher, run: Runner) -> None:
        self._publisher = publisher
        self._run = run
        self._owner = ProcessOwner(
            "SyncPublisher", "make the child's publisher from the SyncClient, in the child"
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def send(self, message: Publishable) -> concurrent.futures.Future[int]:
        """Queue `message` for publishing; returns the future of its confirmed id."""
        [confirmed] = self.send_all([message])
        return confirmed

    def send_all(self, messages: Sequence[Publishable]) -> list[concurrent.futures.Future[int]]:
        """Queue `messages` for publishing in one call (within one call_timeout: send at most about a
        batch at a time); returns the futures of their confirmed ids."""
        self._owner.check()
        confirms = [concurrent.futures.Future[int]() for _ in messages]
        self._run(self._send(messages, confirms), "publisher.send")
        return confirms

    def flush(self) -> None:
        """Wait until every message sent so far is confirmed or failed; raise the first failure."""
        self._owner.check()
        self._run(self._publisher.flush(), "publisher.flush")

    def close(self) -> None:
        """Flush, then stop accepting messages."""
        self._owner.check()
        self._run(self._publisher.close(), "publisher.close")

    def abort(self) -> None:
        """Stop now: unsent messages and unconfirmed requests are cancelled (they may still be enqueued)."""
        self._owner.check()
        self._run(self._publisher.abort(), "publisher.abort")

    async def _send(
        self, messages: Sequence[Publishable], confirms: list[concurrent.futures.Future[int]]
    ) -> None:
        for message, confirmed in zip(messages, confirms, strict=True):
            confirm = await self._publisher.send(message)
            confirm.add_done_callback(functools.partial(_copy_outcome, confirmed))


def _copy_outcome(target: concurrent.futures.Future[int], source: asyncio.Future[int]) -> None:
    if source.cancelled():
        target.cancel()
    elif (error := source.exception()) is not None:
        target.set_exception(error)
    else:
        target.set_result(source.result())
