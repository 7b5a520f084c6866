"""The quorumq side of the benchmark: our asyncio quorumq.Client, on its streaming connection."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from typing import Any

from bench.drivers import OnMessage
from quorumq import Client, NotFoundError, Publisher

MESSAGES_PER_REQUEST = 100
POLL_USER = "bench-poll"
POLL_WAIT_S = 0.2
# A node saturated by the benchmark answers a health check late; the client's default (0.5 s) would
# take that for a frozen node and fail over mid-run.
UNRESPONSIVE_AFTER_S = 10.0


class QuorumqConnection:
    """One quorumq.Client (its own HTTP session) talking to the queue's leader first."""

    def __init__(self, client: Client, queue: str, in_flight: int) -> None:
        self._client = client
        self._queue = queue
        batch = min(MESSAGES_PER_REQUEST, in_flight)
        self._publisher: Publisher = client.publisher(queue, window=-(-in_flight // batch), batch=batch)

    async def send(self, body: bytes) -> asyncio.Future[Any]:
        return await self._publisher.send(body)

    async def flush(self) -> None:
        await self._publisher.flush()

    async def consume(self, prefetch: int, on_message: OnMessage, stop: asyncio.Event) -> None:
        """A subscription (pushed deliveries on the stream, the client's default): settle each delivered
        batch at once, not waiting for earlier acks (AMQP acks are not confirmed)."""
        acking: set[asyncio.Task[None]] = set()
        stopping = asyncio.ensure_future(stop.wait())
        subscription = self._client.subscribe(self._queue, prefetch=prefetch, wait=POLL_WAIT_S)
        batches = subscription.batches()
        try:
            while True:
                arriving = asyncio.ensure_future(anext(batches))
                await asyncio.wait({arriving, stopping}, return_when=asyncio.FIRST_COMPLETED)
                if not arriving.done():
                    arriving.cancel()
                    break
                batch = arriving.result()
                for delivery in batch:
                    on_message(delivery.body)
                ack = asyncio.create_task(subscription.ack(batch))
                acking.add(ack)
                ack.add_done_callback(acking.discard)
            await asyncio.gather(*acking)
        finally:
            stopping.cancel()
            with contextlib.suppress(Exception):
                await subscription.close()

    async def close(self) -> None:
        await self._publisher.close()
        await self._client.close()


class QuorumqDriver:
    """Drives a quorumq cluster given its nodes' HTTP base URLs."""

    broker = "quorumq"
    client = "quorumq.Client (asyncio, msgpack, streaming connection), up to 100 messages per publish"

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls
        self.poll_auth: tuple[str, str] | None = None  # what `queue_length` authenticates with, when set
        self.poll_token: str | None = None

    async def poll_as_user(self, token: bool) -> None:
        """Make `queue_length` authenticate as a stored user (created here) rather than the loopback guest:
        with its Basic credentials, which a node checks with scrypt (~0.5 s) the first time it sees them
        after a start, or with a bearer token taken now (`token`), which it checks with an HMAC."""
        auth = (POLL_USER, secrets.token_hex(16))
        async with self._client(0) as client:
            await client.put_user(*auth)
            await client.set_permissions(POLL_USER, configure=".*", write=".*", read=".*")
        if not token:
            self.poll_auth = auth
            return
        async with Client(self.urls, timeout=60.0, auth=auth) as client:
            self.poll_token, _ = await client.create_token()

    def _client(self, home: int) -> Client:
        first = home % len(self.urls)
        return Client(
            [*self.urls[first:], *self.urls[:first]], timeout=60.0, unresponsive_after=UNRESPONSIVE_AFTER_S
        )

    async def declare(self, queue: str, home: int = 0) -> None:
        async with self._client(home) as client:
            with contextlib.suppress(NotFoundError):
                await client.delete_queue(queue)
            await client.declare(queue, {"x-queue-type": "quorum"})

    async def delete(self, queue: str) -> None:
        async with self._client(0) as client:
            await client.delete_queue(queue)

    async def connect(
        self, queue: str, home: int = 0, *, in_flight: int = 1000, direct: bool = False
    ) -> QuorumqConnection:
        if direct:
            return QuorumqConnection(self._client(home), queue, in_flight)
        async with self._client(home) as client:
            leader = (await client.queue(queue))["leader"]
            nodes = {node["name"]: node["http"] for node in await client.nodes()}
        leader_url = nodes.get(leader)
        urls = [leader_url, *(u for u in self.urls if u != leader_url)] if leader_url else self.urls
        client = Client(urls, timeout=60.0, unresponsive_after=UNRESPONSIVE_AFTER_S)
        return QuorumqConnection(client, queue, in_flight)

    async def queue_length(self, queue: str, home: int = 0) -> int:
        node = [self.urls[home]]
        async with Client(node, timeout=5.0, auth=self.poll_auth, token=self.poll_token) as client:
            return int((await client.queue(queue))["messages"])
