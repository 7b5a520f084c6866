"""Publisher: pipelined confirmed publishing (batches of messages, a bounded window of requests)."""

import asyncio
from types import TracebackType
from typing import TYPE_CHECKING, Self

from quorumq.messages import Publishable

if TYPE_CHECKING:
    from quorumq.client import Client


class Publisher:
    """Groups sent messages into batches of up to `batch` and keeps up to `window` publish requests in flight.

    `await pub.send(message)` returns a future resolved with the message's id once the cluster confirmed
    it (or failed with the request's QuorumqError); `send` waits while a full batch is already waiting
    for a free window slot. `flush()` waits for every confirm and raises the first failure since the
    previous flush. Leaving `async with` flushes (or, on an exception, cancels what is unconfirmed).
    Each request waits up to `wait_ms` for room in a full reject-publish queue (`Client.publish`).
    """

    def __init__(
        self, client: "Client", queue: str, *, window: int = 64, batch: int = 100, wait_ms: int = 0
    ) -> None:
        if window < 1 or batch < 1:
            raise ValueError("window and batch must be at least 1")
        self._client = client
        self._queue = queue
        self._batch = batch
        self._wait_ms = wait_ms
        self._slots = asyncio.Semaphore(window)
        # Plain events rather than a Condition: send() runs once per message and must stay cheap.
        self._has_work = asyncio.Event()  # pending messages, or closing
        self._has_room = asyncio.Event()  # fewer than `batch` pending
        self._has_room.set()
        self._taken = asyncio.Event()  # the pump took a batch
        self._pending: list[tuple[Publishable, asyncio.Future[int]]] = []
        self._in_flight: set[asyncio.Task[None]] = set()
        self._failed: list[asyncio.Future[int]] = []
        self._pump: asyncio.Task[None] | None = None
        self._closed = False

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            await self.close()
        else:
            await self.abort()

    async def send(self, message: Publishable) -> asyncio.Future[int]:
        """Queue `message` for publishing; returns the future of its confirmed id."""
        if self._closed:
            raise RuntimeError("this publisher is closed")
        if self._pump is None:
            self._pump = asyncio.create_task(self._dispatch_batches())
        while len(self._pending) >= self._batch:
            await self._has_room.wait()
        confirm: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._pending.append((message, confirm))
        if len(self._pending) >= self._batch:
            if not self._slots.locked():  # a full batch and a free slot: no need to wake the pump
                await self._slots.acquire()  # free, so this does not wait (or let anyone overtake)
                self._take_batch()
                return confirm
            self._has_room.clear()
        self._has_work.set()
        return confirm

    async def flush(self) -> None:
        """Wait until every message sent so far is confirmed or failed; raise the first failure."""
        while self._pending:
            self._taken.clear()
            await self._taken.wait()
        while self._in_flight:
            await asyncio.wait(set(self._in_flight))
        errors = self._take_failures()
        if errors:
            raise errors[0]

    async def close(self) -> None:
        """Flush, then stop accepting messages."""
        try:
            await self.flush()
        finally:
            await self._stop()

    async def abort(self) -> None:
        """Stop now: unsent messages and unconfirmed requests are cancelled (they may still be enqueued)."""
        self._closed = True
        if self._pump is not None:
            self._pump.cancel()
            await asyncio.gather(self._pump, return_exceptions=True)
        for _, confirm in self._pending:
            confirm.cancel()
        self._pending.clear()
        self._has_room.set()
        self._taken.set()
        for request in list(self._in_flight):
            request.cancel()
        await asyncio.gather(*self._in_flight, return_exceptions=True)
        self._take_failures()

    async def _stop(self) -> None:
        self._closed = True
        self._has_work.set()
        if self._pump is not None:
            await self._pump

    def _take_failures(self) -> list[BaseException]:
        """The errors of the confirms failed since the last call (marking them as retrieved)."""
        failed, self._failed = self._failed, []
        errors = [confirm.exception() for confirm in failed if not confirm.cancelled()]
        return [error for error in errors if error is not None]

    async def _dispatch_batches(self) -> None:
        while True:
            await self._has_work.wait()
            if not self._pending:
                if self._closed:
                    return
                self._has_work.clear()
                continue
            await self._slots.acquire()
            self._take_batch()

    def _take_batch(self) -> None:
        """Publish the oldest batch of pending messages, in the window slot just acquired."""
        batch, self._pending = self._pending[: self._batch], self._pending[self._batch :]
        if len(self._pending) < self._batch:
            self._has_room.set()
        self._taken.set()
        request = asyncio.create_task(self._publish(batch))
        self._in_flight.add(request)
        request.add_done_callback(self._in_flight.discard)

    async def _publish(self, batch: list[tuple[Publishable, asyncio.Future[int]]]) -> None:
        try:
            messages = [message for message, _ in batch]
            ids = await self._client.publish(self._queue, messages, wait_ms=self._wait_ms)
        except Exception as exc:
            for _, confirm in batch:
                if not confirm.done():
                    confirm.set_exception(exc)
            self._failed.extend(confirm for _, confirm in batch)
        else:
            for (_, confirm), message_id in zip(batch, ids, strict=True):
                if not confirm.done():
                    confirm.set_result(message_id)
        finally:
            self._slots.release()
            for _, confirm in batch:
                confirm.cancel()
