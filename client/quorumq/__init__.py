"""The quorumq client: asyncio (Client) and blocking (SyncClient), with its messages and errors.

async with Client(["127.0.0.1:8080", "127.0.0.1:8081"]) as client:
    await client.declare("orders", {"x-delivery-limit": 5})
    ids = await client.publish("orders", [b"raw bytes", "text", Message("x", headers={"k": 1})])
    await client.declare_exchange("events", "topic")
    await client.bind("events", "orders", "order.*")
    routed = await client.publish_to_exchange("events", "placed", "order.placed")  # routed.routed["orders"]
    async with client.subscribe("orders") as sub:
        async for message in sub:
            async with message.process():  # ack when the block ends, nack (requeue) when it raises
                handle(message.body)

with SyncClient(["127.0.0.1:8080"]) as client, client.publisher("orders") as pub:
    confirms = [pub.send(body) for body in bodies]  # flushed when the block ends
"""

from quorumq.auth import Auth
from quorumq.client import DEFAULT_PREFETCH, Client, ExchangeType, SequencePosition, Wire, queue_path
from quorumq.errors import (
    BadRequestError,
    CallTimeoutError,
    ConflictError,
    ConsumerEndedError,
    ForbiddenError,
    ForkedClientError,
    NoNodeAvailableError,
    NotFoundError,
    OutcomeUnknownError,
    OverloadedError,
    PayloadTooLargeError,
    ProtocolError,
    QuorumqError,
    RejectedPublishError,
    ResourceAlarmError,
    SeqTooOldError,
    TooManyRequestsError,
    TransportError,
    UnauthorizedError,
    UnavailableError,
)
from quorumq.incoming import IncomingMessage
from quorumq.messages import Delivery, Message, Publishable
from quorumq.publish_answers import RoutedPublish
from quorumq.publisher import Publisher
from quorumq.subscription import Subscription
from quorumq.sync import SyncClient
from quorumq.sync_publisher import SyncPublisher
from quorumq.transport import normalize_node

__all__ = [
    "DEFAULT_PREFETCH",
    "Auth",
    "BadRequestError",
    "CallTimeoutError",
    "Client",
    "ConflictError",
    "ConsumerEndedError",
    "Delivery",
    "ExchangeType",
    "ForbiddenError",
    "ForkedClientError",
    "IncomingMessage",
    "Message",
    "NoNodeAvailableError",
    "NotFoundError",
    "OutcomeUnknownError",
    "OverloadedError",
    "PayloadTooLargeError",
    "ProtocolError",
    "Publishable",
    "Publisher",
    "QuorumqError",
    "RejectedPublishError",
    "ResourceAlarmError",
    "RoutedPublish",
    "SeqTooOldError",
    "SequencePosition",
    "Subscription",
    "SyncClient",
    "SyncPublisher",
    "TooManyRequestsError",
    "TransportError",
    "UnauthorizedError",
    "UnavailableError",
    "Wire",
    "normalize_node",
    "queue_path",
]
