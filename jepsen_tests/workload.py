"""The workload: concurrent publishers and consumers of unique integers, every operation recorded.

Publishers send one value per confirmed publish: `ok` when confirmed, `fail` only when the server
certainly refused it (4xx, reject-publish), `info` when the outcome is unknown (timeout, connection lost
after sending, 503 after a possibly sent attempt, the publisher crashed). A confirm whose answer breaks
the protocol (fewer ids than messages) is `ok` with the error's code. Consumers take deliveries with
manual acks: a value is dequeued (`ok`) once the consumer processed it and sent its ack (with the ack's
error, if it failed); a value it nacks with requeue, or leaves unacked when it cancels mid-delivery,
goes back to the queue and its dequeue is a `fail`. Every client can be crashed mid-request by the
`client` nemesis (jepsen_tests.client_life) and comes back as a new client when healed.

Publishers of odd number publish on the streaming connection (the client's default), the others over
HTTP (so a lone publisher is crashed with its publish on the wire), and both paths face the faults;
consumers poll over HTTP.

The queue features of issue 22 are in the mix, so the checker covers them under faults: a publish may
carry a priority, a nack with requeue may carry a delay (the value waits in the queue before it is
handed out again), and a consumer may touch a batch before it acks it. Each such op says so in its
`detail`, which the verdict counts (`exercised`).

The deduplication window of issue 41 too: a publish may carry a message id, and is then followed by a
resend of a new value under the same id (`f` `resend`, detail `first=<value>`), as a producer that lost
track of its first attempt does. The runner's work queues deduplicate, over a window that outlasts any
clock fault, so its publishers do it (`RESEND_PROBABILITY`; a queue without a window would take both):
at most one value of the two may ever be dequeued, and none of the resend's once the first was
confirmed before it (`jepsen_tests.message_ids`).

And its exchanges: a publish may go through a fanout exchange bound to queues of its own (`fan-a`,
`fan-b`; an op `enqueue` whose `queue` is the exchange and whose detail is `fanout=fan-a,fan-b`), and
is confirmed once every bound queue committed its copy, so each copy must be dequeued from its queue
(`jepsen_tests.fanout`). It carries no priority; a resend under its message id goes through the
exchange too. A refusal of such a publish is one queue's, and the others may have taken their copy, so
it is `info`, never `fail`. A publisher declares the exchange and binds its queues at the start of
every life, as an application declares what it publishes to when it connects: the answers name the
routing revision, which its publishes through the exchange carry, so a node routes them only once it
applied the bindings (read your writes). A confirm that names fewer queues than are bound is `ok` with
the error `short_routed`, a protocol error. One consumer more per fanout queue takes its deliveries as
the others do. The runner turns it on (`FANOUT_PROBABILITY`); its fanout queues are declared as its
work queues are, deduplication window and dead-letter queue included.

And its ordered message groups: a publish may go to a grouped queue of its own (`grp`, declared with
`x-message-groups: true`) in one of a few groups (`g0`-`g3`), its detail naming the group
(`group=g2`, beside its priority), and a resend under its message id goes there in the same group. Two
consumers more take that queue's deliveries as the others do, and each dequeue from it (the drain's
too) names at its invoke the batch it came in and the group the delivery carried (`batch=N group=g2`,
batches numbered across the workload), so that the checker sees which values a consumer held at once
and in which order each group came out (`jepsen_tests.message_groups`). The runner turns it on
(`GROUPS_PROBABILITY`) and declares the grouped queue as its work queues, deduplication window and
dead-letter queue included.

In the runner's AMQP client mode (`amqp_publishers`, `amqp_consumed`) further clients speak AMQP 0-9-1
through aio-pika, as RabbitMQ applications do, each to one node's listener (`jepsen_tests.amqp_links`),
drawn afresh whenever its connection breaks. Its publishers draw and record as the others, priorities,
resends, fan-out and groups included; a publish not confirmed by `basic.ack` is `info` (quorumq nacks
what it refused and what it could not confirm in time alike; a return or a timeout is no confirm). Its
consumers take deliveries with a prefetch and manual acks, nack and reject as the others, cancel
mid-batch by closing their connection (which hands the rest back), and neither touch nor delay nacks
(AMQP has neither). The `client` nemesis crashes the HTTP and stream clients only; the AMQP ones face
the node and network faults.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass

import aiohttp

from jepsen_tests.client_life import CRASHED, CrashableClient, CrashedClient, Life
from jepsen_tests.fanout import fanout_detail
from jepsen_tests.history import HistoryWriter, OpFunction, OpType
from jepsen_tests.links import ConsumeLink, HttpConsumeLink, HttpPublishLink, PublishLink
from jepsen_tests.message_groups import group_detail, held_detail
from quorumq import (
    BadRequestError,
    Client,
    ConflictError,
    Delivery,
    Message,
    NotFoundError,
    PayloadTooLargeError,
    ProtocolError,
    QuorumqError,
    RejectedPublishError,
)

DEFINITE_PUBLISH_FAILURES = (
    BadRequestError,
    ConflictError,
    NotFoundError,
    PayloadTooLargeError,
    RejectedPublishError,
)
CONSUMER_TIMEOUT_MS = 5000
RETRY_PAUSE_S = 0.2
POLL_WAIT_S = 1.0
CRASH_WAIT_S = 5.0
PROCESS_PREFIXES = {"publisher": "pub", "consumer": "con"}
AMQP_PREFIXES = {"publisher": "apub", "consumer": "acon"}
DEAD_LETTER_SUFFIX = "-dlq"
FANOUT_EXCHANGE = "jepsen-fanout"
FANOUT_QUEUES = ("fan-a", "fan-b")
GROUPS_QUEUE = "grp"
GROUPS = ("g0", "g1", "g2", "g3")
GROUPS_CONSUMERS = 2
"""How many consumers take the grouped queue's deliveries, so that its groups go to several at once."""


@dataclass(frozen=True)
class WorkloadConfig:
    """How many clients of each kind, how fast publishers go, and how consumers misbehave."""

    queues: tuple[str, ...]
    publishers: int = 4
    consumers: int = 3
    publish_rate: float = 40.0
    publish_timeout: float = 5.0
    nack_probability: float = 0.1
    cancel_probability: float = 0.05
    reject_probability: float = 0.03
    priorities: tuple[int, ...] = (0, 0, 0, 0, 3, 9)  # drawn for each publish
    nack_delays_ms: tuple[int | None, ...] = (None, 100, 400)  # drawn for each requeueing nack
    touch_probability: float = 0.2
    resend_probability: float = 0.0  # a publish carries a message id, and a new value is resent under it:
    # only to queues that deduplicate by message id (the runner's, RESEND_PROBABILITY)
    fanout_probability: float = 0.0  # a publish goes through `fanout_exchange` to every `fanout_queues`:
    # only where those queues exist (the runner's, FANOUT_PROBABILITY)
    fanout_exchange: str = FANOUT_EXCHANGE
    fanout_queues: tuple[str, ...] = FANOUT_QUEUES
    groups_probability: float = 0.0  # a publish goes to `groups_queue` in one of `groups`: only where that
    # queue exists with `x-message-groups` (the runner's, GROUPS_PROBABILITY)
    groups_queue: str = GROUPS_QUEUE
    groups: tuple[str, ...] = GROUPS
    amqp_publishers: int = 0  # publishers more, over AMQP 0-9-1 (the runner's AMQP client mode)
    amqp_consumed: tuple[str, ...] = ()  # a consumer more over AMQP 0-9-1 for each of these queues

    @property
    def grouped_queues(self) -> tuple[str, ...]:
        """The grouped queue when publishes go to it, else none."""
        return (self.groups_queue,) if self.groups_probability else ()

    @property
    def consumed_queues(self) -> tuple[str, ...]:
        """The work queues, the fanout's queues when publishes go through it and the grouped queue when
        publishes go to it (dead-letter queues aside)."""
        fanned = self.fanout_queues if self.fanout_probability else ()
        return (*self.queues, *fanned, *self.grouped_queues)


RESEND_PROBABILITY = 0.1
"""How often the runner's publishers resend under a message id (its work queues deduplicate)."""
FANOUT_PROBABILITY = 0.1
"""How often the runner's publishers publish through the fanout exchange (it declares the queues)."""
GROUPS_PROBABILITY = 0.1
"""How often the runner's publishers publish to the grouped queue (it declares it)."""


def dead_letter_queue(queue: str) -> str:
    """Where a work queue's rejected messages go (at-least-once dead-lettering)."""
    return f"{queue}{DEAD_LETTER_SUFFIX}"


def dead_letter_source(queue: str) -> str:
    """The queue whose rejected messages `queue` holds, or `queue` itself when it is no dead-letter
    queue: where a value dequeued from it was enqueued."""
    return queue.removesuffix(DEAD_LETTER_SUFFIX)


class Workload:
    """Clients against `urls` recording into `history`; `rng` decides every client's choices."""

    def __init__(
        self,
        urls: Sequence[str],
        history: HistoryWriter,
        config: WorkloadConfig,
        rng: random.Random,
        amqp_urls: Sequence[str] = (),
    ) -> None:
        self.urls = list(urls)
        self.amqp_urls = list(amqp_urls)
        self.history = history
        self.config = config
        self.rng = rng
        self._values = itertools.count()
        self._batches = itertools.count()
        self._orphans: set[tuple[str, str]] = set()
        self._clients: dict[str, CrashableClient] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def _client(self, session: aiohttp.ClientSession | None = None, *, stream: bool = False) -> Client:
        """A client that tries the nodes in its own random order, with streams or without."""
        nodes = self.rng.sample(self.urls, len(self.urls))
        timeout = self.config.publish_timeout
        return Client(nodes, timeout=timeout, connect_timeout=1.0, session=session, stream=stream)

    async def run(self, stop: asyncio.Event) -> None:
        """Run every client until `stop` is set."""
        self._loop = asyncio.get_running_loop()
        queues = self.config.queues
        lives: dict[str, Life] = {}
        streamed: set[str] = set()
        for i in range(self.config.publishers):
            name = f"{PROCESS_PREFIXES['publisher']}{i}"
            lives[name] = functools.partial(self._publisher, name, random.Random(self.rng.random()), stop)
            if i % 2 == 1:
                streamed.add(name)
        for i in range(self.config.consumers):
            name, queue = f"{PROCESS_PREFIXES['consumer']}{i}", queues[i % len(queues)]
            lives[name] = functools.partial(
                self._consumer, name, queue, random.Random(self.rng.random()), stop
            )
        fanout_queues = self.config.fanout_queues if self.config.fanout_probability else ()
        grouped = [queue for queue in self.config.grouped_queues for _ in range(GROUPS_CONSUMERS)]
        for i, queue in enumerate((*fanout_queues, *grouped), start=self.config.consumers):
            name = f"{PROCESS_PREFIXES['consumer']}{i}"
            lives[name] = functools.partial(
                self._consumer, name, queue, random.Random(self.rng.random()), stop
            )
        self._clients = {
            name: CrashableClient(name, life, functools.partial(self._client, stream=name in streamed))
            for name, life in lives.items()
        }
        amqp = [
            self._amqp_publisher(f"{AMQP_PREFIXES['publisher']}{i}", random.Random(self.rng.random()), stop)
            for i in range(self.config.amqp_publishers)
        ]
        amqp += [
            self._amqp_consumer(
                f"{AMQP_PREFIXES['consumer']}{i}", queue, random.Random(self.rng.random()), stop
            )
            for i, queue in enumerate(self.config.amqp_consumed)
        ]
        await asyncio.gather(*(client.run(stop) for client in self._clients.values()), *amqp)

    def crash_client(self, role: str, rng: random.Random) -> CrashedClient:
        """From another thread (the nemesis'): crash one running publisher or consumer, drawn with `rng`,
        with its next request on the wire; its `revive` restarts it as a new client."""
        loop = self._loop
        names = sorted(name for name in self._clients if name.startswith(PROCESS_PREFIXES[role]))
        if loop is None or not names:
            return CrashedClient(f"no {role}", "", lambda: None)
        client = self._clients[rng.choice(names)]
        request = asyncio.run_coroutine_threadsafe(client.crash(CRASH_WAIT_S), loop).result()

        def revive() -> None:
            loop.call_soon_threadsafe(client.revive)

        return CrashedClient(client.process, request, revive)

    async def _publisher(self, process: str, rng: random.Random, stop: asyncio.Event, client: Client) -> None:
        await self._publish_until(process, rng, stop, HttpPublishLink(client))

    async def _amqp_publisher(self, process: str, rng: random.Random, stop: asyncio.Event) -> None:
        """An AMQP publisher: a connection to a node drawn with `rng`, again whenever it breaks."""
        from jepsen_tests.amqp_links import AmqpPublishLink  # aio-pika (the dev extra): AMQP mode only

        while not stop.is_set():
            try:
                url = rng.choice(self.amqp_urls)
                async with AmqpPublishLink.opened(url, self.config.publish_timeout) as link:
                    await self._publish_until(process, rng, stop, link)
            except QuorumqError:
                await asyncio.sleep(RETRY_PAUSE_S)

    async def _publish_until(
        self, process: str, rng: random.Random, stop: asyncio.Event, link: PublishLink
    ) -> None:
        """Publish drawn values through `link` until `stop` or until the link breaks."""
        pause = 1.0 / self.config.publish_rate
        fanout = self.config.fanout_probability  # drawn only when on, as resends and groups are
        groups = self.config.groups_probability
        if fanout and not await self._declare_fanout(link, stop):
            return
        while not stop.is_set() and not link.broken:
            fanned = bool(fanout) and rng.random() < fanout
            group = None
            if fanned:
                queue, value, priority = self.config.fanout_exchange, next(self._values), 0
                detail: str | None = fanout_detail(self.config.fanout_queues)
            else:
                grouped = bool(groups) and rng.random() < groups
                queue = self.config.groups_queue if grouped else rng.choice(self.config.queues)
                value = next(self._values)
                priority = rng.choice(self.config.priorities)
                group = rng.choice(self.config.groups) if grouped else None
                facts = [group_detail(group)] if group is not None else []
                facts += [f"priority={priority}"] if priority else []
                detail = " ".join(facts) or None
            resends = self.config.resend_probability  # drawn only when on: other runs draw as before
            message_id = f"m{value}" if resends and rng.random() < resends else None
            message = Message(str(value), priority=priority, message_id=message_id, group=group)
            await self._publish_and_record(link, process, "enqueue", queue, value, message, detail, fanned)
            if message_id is not None:
                resent = next(self._values)
                again = Message(str(resent), message_id=message_id, group=group)
                await self._publish_and_record(
                    link, process, "resend", queue, resent, again, f"first={value}", fanned
                )
            await asyncio.sleep(pause)

    async def _declare_fanout(self, link: PublishLink, stop: asyncio.Event) -> bool:
        """Declare the fanout exchange and bind its queues through `link` (again: its publishes through
        the exchange then route by them), retrying until done; False if `stop` came first or the link
        broke."""
        while not stop.is_set() and not link.broken:
            try:
                await link.declare_fanout(self.config.fanout_exchange, self.config.fanout_queues)
            except QuorumqError:
                await asyncio.sleep(RETRY_PAUSE_S)
            else:
                return True
        return False

    async def _publish_and_record(
        self,
        link: PublishLink,
        process: str,
        f: OpFunction,
        queue: str,
        value: int,
        message: Message,
        detail: str | None,
        fanned: bool = False,
    ) -> None:
        """Publish one value (through the fanout exchange `queue` when `fanned`) and record its invoke and
        outcome as `f`."""
        record = functools.partial(self.history.record, process, f=f, value=value, queue=queue)
        record("invoke", detail=detail)
        try:
            error = await link.send(queue, message, self.config.fanout_queues if fanned else ())
        except ProtocolError as exc:  # a 2xx: confirmed, but the answer broke the protocol
            record("ok", error=exc.code, detail=detail)
        except DEFINITE_PUBLISH_FAILURES as exc:  # through an exchange: one queue's, others may hold it
            record("info" if fanned else "fail", error=exc.code, detail=detail)
        except QuorumqError as exc:
            record("info", error=exc.code, detail=detail)
        except asyncio.CancelledError:
            record("info", error=CRASHED, detail=detail)
            raise
        else:
            record("ok", error=error, detail=detail)

    async def _consumer(
        self, process: str, queue: str, rng: random.Random, stop: asyncio.Event, client: Client
    ) -> None:
        prefetch = rng.randint(1, 10)
        while not stop.is_set():
            try:
                tag = await client.consume(queue, prefetch=prefetch, timeout_ms=CONSUMER_TIMEOUT_MS)
            except QuorumqError:
                await asyncio.sleep(RETRY_PAUSE_S)
                continue
            try:
                await self._consume_until_cancelled(
                    process, HttpConsumeLink(client, queue, tag), queue, rng, stop
                )
            except QuorumqError:
                await asyncio.sleep(RETRY_PAUSE_S)  # the consumer may be gone; its unacked return
            await self._cancel(client, queue, tag)

    async def _cancel(self, client: Client, queue: str, tag: str) -> None:
        """Cancel a consumer; one that cannot be cancelled now is kept for `cancel_orphans`."""
        try:
            await client.cancel(queue, tag)
        except NotFoundError:
            pass  # already gone (timed out); its unacked messages returned
        except QuorumqError:
            self._orphans.add((queue, tag))

    async def cancel_orphans(self) -> None:
        """Cancel the consumers that could not be cancelled during faults, so that their unacked messages
        return now rather than after the server's consumer timeout."""
        async with self._client() as client:
            for queue, tag in sorted(self._orphans):
                self._orphans.discard((queue, tag))
                await self._cancel(client, queue, tag)

    async def _amqp_consumer(self, process: str, queue: str, rng: random.Random, stop: asyncio.Event) -> None:
        """An AMQP consumer of `queue`: a connection to a node drawn with `rng`, again whenever it breaks
        or the consumer cancels itself (closing the connection hands back what it held unacked)."""
        from jepsen_tests.amqp_links import AmqpConsumeLink  # aio-pika (the dev extra): AMQP mode only

        prefetch = rng.randint(1, 10)
        while not stop.is_set():
            try:
                async with AmqpConsumeLink.opened(rng.choice(self.amqp_urls), queue, prefetch) as link:
                    await self._consume_until_cancelled(process, link, queue, rng, stop)
            except QuorumqError:
                await asyncio.sleep(RETRY_PAUSE_S)

    async def _consume_until_cancelled(
        self, process: str, link: ConsumeLink, queue: str, rng: random.Random, stop: asyncio.Event
    ) -> None:
        """Process `queue`'s deliveries through `link` until `stop`, an error, or a random cancel in the
        middle of a batch."""
        while not stop.is_set():
            batch = await link.deliveries(max=10, wait=POLL_WAIT_S)
            self._record_held(process, queue, batch)
            cut = len(batch)
            if batch and rng.random() < self.config.cancel_probability:
                cut = rng.randrange(len(batch))
            await self._settle(process, link, queue, batch[:cut], rng)
            if cut < len(batch):
                self._record(process, "fail", queue, batch[cut:])
                return  # the caller cancels the consumer, which returns the unacked rest

    async def _settle(
        self, process: str, link: ConsumeLink, queue: str, batch: Sequence[Delivery], rng: random.Random
    ) -> None:
        """Ack most of `batch` (touching it first, sometimes, where the link can), nack (requeue, sometimes
        with a delay where the link can) some and reject a few to the dead-letter queue; an ack that fails
        raises after recording. A rejected value is not dequeued here: it must reach the dead-letter
        queue, whose drain dequeues it, or the checker reports it lost."""
        draws = [(d, rng.random()) for d in batch]
        nacked = [d for d, draw in draws if draw < self.config.nack_probability]
        rejected = [
            d
            for d, draw in draws
            if 0 <= draw - self.config.nack_probability < self.config.reject_probability
        ]
        acked = [d for d in batch if d not in nacked and d not in rejected]
        delay = rng.choice(self.config.nack_delays_ms) if link.delays_nacks else None
        for handed_back, requeue in ((nacked, True), (rejected, False)):
            if handed_back:
                await self._nack_and_record(process, link, queue, handed_back, requeue, delay)
        touched = False
        if acked and link.touches and rng.random() < self.config.touch_probability:
            try:
                await link.touch([d.id for d in acked])
                touched = True
            except QuorumqError:
                pass  # a touch that fails changes nothing the ack needs, and is not counted
            except asyncio.CancelledError:
                self._record(process, "fail", queue, acked, CRASHED)  # never acked: they come back
                raise
        failure = await self._ack_and_record(process, link, queue, acked, "touched" if touched else None)
        if failure is not None:
            raise failure

    async def _nack_and_record(
        self,
        process: str,
        link: ConsumeLink,
        queue: str,
        deliveries: Sequence[Delivery],
        requeue: bool,
        delay_ms: int | None,
    ) -> None:
        """Hand `deliveries` back (with `requeue`, after `delay_ms` when given) and record each as a
        dequeue `fail`, whatever the nack's outcome (also when the consumer is crashed mid-nack: what is
        not settled comes back too); the delay is in its detail only when the nack was taken."""
        wait = delay_ms if requeue else None
        detail = None
        try:
            await link.nack([d.id for d in deliveries], requeue, wait)
            detail = None if wait is None else f"delay={wait}"
        except QuorumqError:
            pass
        finally:
            self._record(process, "fail", queue, deliveries, detail=detail)

    async def _ack_and_record(
        self,
        process: str,
        link: ConsumeLink,
        queue: str,
        deliveries: Sequence[Delivery],
        detail: str | None = None,
    ) -> QuorumqError | None:
        """Ack `deliveries` and record each as dequeued: it was processed whether or not the ack landed
        (a message left unsettled comes back, and counts as a duplicate), also when the consumer is
        crashed mid-ack. Returns the ack's error."""
        if not deliveries:
            return None
        failure: QuorumqError | None = None
        error: str | None = None
        try:
            await link.ack([d.id for d in deliveries])
        except QuorumqError as exc:
            failure, error = exc, exc.code
        except asyncio.CancelledError:
            error = CRASHED
            raise
        finally:
            self._record(process, "ok", queue, deliveries, error, detail)
        return failure

    def _record(
        self,
        process: str,
        type_: OpType,
        queue: str,
        deliveries: Sequence[Delivery],
        error: str | None = None,
        detail: str | None = None,
    ) -> None:
        """One dequeue op of `type_` per delivery (a `fail` is a value handed back to the queue)."""
        for delivery in deliveries:
            self.history.record(process, type_, "dequeue", int(delivery.body), queue, error, detail)

    def _record_held(self, process: str, queue: str, batch: Sequence[Delivery]) -> None:
        """A dequeue invoke per delivery of one poll's answer; from a grouped queue each names the batch
        (numbered across the workload) and the group the delivery carried."""
        if queue not in self.config.grouped_queues:
            self._record(process, "invoke", queue, batch)
            return
        number = next(self._batches)
        for delivery in batch:
            self._record(process, "invoke", queue, [delivery], detail=held_detail(number, delivery.group))

    async def drain(self, timeout: float) -> dict[str, int]:
        """Consume and ack every queue, then its dead-letter queue, until empty; returns what is left.

        A work queue counts as empty only once its pending dead letters have moved on, so draining
        its dead-letter queue afterwards sees every rejected value."""
        await self.cancel_orphans()
        left = {}
        async with self._client() as client:
            for queue in self.config.consumed_queues:
                left[queue] = await self._drain_queue(client, queue, timeout)
            for queue in self.config.consumed_queues:
                left[dead_letter_queue(queue)] = await self._drain_queue(
                    client, dead_letter_queue(queue), timeout
                )
        return left

    async def _drain_queue(self, client: Client, queue: str, timeout: float) -> int:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        remaining = -1
        while loop.time() < deadline:
            try:
                tag = await client.consume(queue, prefetch=200, timeout_ms=CONSUMER_TIMEOUT_MS)
                link = HttpConsumeLink(client, queue, tag)
                while loop.time() < deadline:
                    batch = await link.deliveries(max=200, wait=POLL_WAIT_S)
                    if batch:
                        self._record_held("drain", queue, batch)
                        await self._ack_and_record("drain", link, queue, batch)
                        continue
                    remaining = int((await client.queue(queue))["messages"])
                    if remaining == 0:
                        break
                await self._cancel(client, queue, tag)
                if remaining == 0:
                    return 0
            except QuorumqError:
                await asyncio.sleep(RETRY_PAUSE_S)
        return remaining
