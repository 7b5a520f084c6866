"""What a new consumer asks for (`POST /api/queues/{q}/consumers`, a `consume` on the stream), declared
once: the struct checks the body and gives its schema."""

from __future__ import annotations

from typing import Annotated, ClassVar

from msgspec import Meta

from api.request_bodies import Moment, RequestBody
from api.validation import moment_ms
from cluster.queues.queue_limits import INT64_MAX

DEFAULT_PREFETCH = 100
MAX_PREFETCH = 65535


class ConsumerOptions(RequestBody):
    """A consumer's credit, priority, consumer timeout (ms; none: the queue's, else the node's), start
    time and whether what it is handed is settled as it is handed out (AMQP's no-ack)."""

    optional: ClassVar[bool] = True
    prefetch: Annotated[int, Meta(ge=1, le=MAX_PREFETCH)] = DEFAULT_PREFETCH
    priority: Annotated[int, Meta(ge=-(2**31), le=INT64_MAX)] = 0
    timeout: Annotated[
        Annotated[int, Meta(ge=1, le=INT64_MAX)] | None,
        Meta(
            description="the consumer timeout (ms): a delivery held this long without an ack, nack or touch "
            "ends the consumer (default: the queue's x-consumer-timeout, else the node's)"
        ),
    ] = None
    since: Annotated[
        Moment | None, Meta(description="only messages enqueued at or after this time: epoch ms or ISO-8601")
    ] = None
    auto_ack: Annotated[
        bool,
        Meta(
            description="AMQP's no-ack: each poll's deliveries are settled as they are handed out "
            "(never with durable)"
        ),
    ] = False

    @property
    def since_ms(self) -> int | None:
        """`since` in epoch ms (400 for a time that is neither epoch ms nor ISO-8601)."""
        return moment_ms(self.since, "since")


class ConsumerRequest(ConsumerOptions):
    """A consumer's registration over HTTP: a consumer's options, or a durable consumer's name."""

    durable: Annotated[bool, Meta(description="a durable consumer: a delivery sequence, by name")] = False
    name: Annotated[str | None, Meta(description="a durable consumer's name")] = None

    def durable_extras(self) -> list[str]:
        """The options given that a durable consumer does not take (it never times out)."""
        given = {"timeout": self.timeout is not None, "since": self.since is not None}
        return [name for name, is_set in (given | {"auto_ack": self.auto_ack}).items() if is_set]
