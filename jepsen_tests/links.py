"""How a workload client reaches the cluster: a publishing link and a consuming link, over HTTP or the
stream (the quorumq client) here, over AMQP 0-9-1 in `jepsen_tests.amqp_links`.

The workload draws and records the same operations whichever link a client has; a link only carries
them. Every failure a link reports is a `quorumq.QuorumqError` (status 0 when no answer arrived), so
the workload classifies outcomes one way. A link that is `broken` can carry nothing more: its client
starts a new connection (HTTP links never break, the quorumq client fails over by itself).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from quorumq import Client, Delivery, Message

SHORT_ROUTED = "short_routed"


class PublishLink(Protocol):
    """Publishes one message at a time, returning once the cluster confirmed it."""

    @property
    def broken(self) -> bool:
        """Whether the link can publish no more (its client reconnects)."""
        ...

    async def declare_fanout(self, exchange: str, queues: Sequence[str]) -> None:
        """Declare the fanout `exchange` and bind `queues` to it, so that this link's publishes through it
        route by those bindings (read your writes)."""
        ...

    async def send(self, target: str, message: Message, fanned_to: Sequence[str] = ()) -> str | None:
        """Publish `message` to the queue `target`, or through the fanout exchange `target` bound to
        `fanned_to` when given; returns once confirmed, with the error of a confirm that breaks the
        protocol without failing (None when it keeps it)."""
        ...


class ConsumeLink(Protocol):
    """One consumer of one queue: polls deliveries and settles them by id."""

    touches: bool
    """Whether it can extend its deliveries' timeouts (`touch`)."""
    delays_nacks: bool
    """Whether a requeueing nack can take a delay."""

    async def deliveries(self, max: int, wait: float) -> list[Delivery]:
        """Up to `max` deliveries, waiting up to `wait` seconds for the first."""
        ...

    async def ack(self, ids: Sequence[int]) -> None:
        """Settle `ids` as processed."""
        ...

    async def nack(self, ids: Sequence[int], requeue: bool, delay_ms: int | None) -> None:
        """Hand `ids` back: to the queue with `requeue` (after `delay_ms` when it delays nacks), else to
        its dead-letter queue."""
        ...

    async def touch(self, ids: Sequence[int]) -> None:
        """Extend the consumer timeout of `ids` (only when it `touches`)."""
        ...


@dataclass(frozen=True)
class HttpPublishLink:
    """Publishes through a quorumq client (HTTP or its stream)."""

    client: Client
    broken = False

    async def declare_fanout(self, exchange: str, queues: Sequence[str]) -> None:
        """Declare the exchange and bind the queues again: the answers name the routing revision the
        client's publishes through it then carry."""
        await self.client.declare_exchange(exchange, "fanout")
        for queue in queues:
            await self.client.bind(exchange, queue)

    async def send(self, target: str, message: Message, fanned_to: Sequence[str] = ()) -> str | None:
        """A confirm through the exchange that names fewer queues than it is bound to is SHORT_ROUTED."""
        if not fanned_to:
            await self.client.publish(target, [message])
            return None
        routed = (await self.client.publish_to_exchange(target, [message])).routed
        return None if set(routed) == set(fanned_to) else SHORT_ROUTED


@dataclass(frozen=True)
class HttpConsumeLink:
    """Consumer `tag` of `queue` through a quorumq client."""

    client: Client
    queue: str
    tag: str
    touches = True
    delays_nacks = True

    async def deliveries(self, max: int, wait: float) -> list[Delivery]:
        return list(await self.client.deliveries(self.queue, self.tag, max=max, wait=wait))

    async def ack(self, ids: Sequence[int]) -> None:
        await self.client.ack(self.queue, self.tag, list(ids))

    async def nack(self, ids: Sequence[int], requeue: bool, delay_ms: int | None) -> None:
        await self.client.nack(self.queue, self.tag, list(ids), requeue=requeue, delay_ms=delay_ms)

    async def touch(self, ids: Sequence[int]) -> None:
        await self.client.touch(self.queue, self.tag, list(ids))
