"""The quorumq client: asyncio (QuorumqClient) and blocking (SyncClient), with its messages and errors.

async with QuorumqClient(["127.0.0.1:8080", "127.0.0.1:8081"]) as client:
    await client.declare("orders", {"x-delivery-limit": 5})
    ids = await client.publish("orders", [b"raw bytes", "text", Message("x", headers={"k": 1})])
    async with client.subscribe("orders") as sub:
        async for message in sub:
            async with message.process():  # ack when the block ends, nack (requeue) when it raises
                handle(message.body)

with SyncClient(["127.0.0.1:8080"]) as client, client.publisher("orders") as pub:
    confirms = [pub.send(body) for body in bodies]  # flushed when the block ends
"""

from api.client_async import DEFAULT_PREFETCH, QuorumqClient, queue_path
from api.client_errors import (
    BadRequestError,
    CallTimeoutError,
    ConflictError,
    ForbiddenError,
    ForkedClientError,
    NoNodeAvailableError,
    NotFoundError,
    OutcomeUnknownError,
    PayloadTooLargeError,
    ProtocolError,
    QuorumqError,
    RejectedPublishError,
    SeqTooOldError,
    TooManyRequestsError,
    TransportError,
    UnauthorizedError,
    UnavailableError,
)
from api.client_incoming import IncomingMessage
from api.client_messages import Delivery, Message, Publishable
from api.client_publisher import Publisher
from api.client_subscription import Subscription
from api.client_sync import SyncClient
from api.client_sync_publisher import SyncPublisher
from api.client_transport import normalize_node

__all__ = [
    "DEFAULT_PREFETCH",
    "BadRequestError",
    "CallTimeoutError",
    "ConflictError",
    "Delivery",
    "ForbiddenError",
    "ForkedClientError",
    "IncomingMessage",
    "Message",
    "NoNodeAvailableError",
    "NotFoundError",
    "OutcomeUnknownError",
    "PayloadTooLargeError",
    "ProtocolError",
    "Publishable",
    "Publisher",
    "QuorumqClient",
    "QuorumqError",
    "RejectedPublishError",
    "SeqTooOldError",
    "Subscription",
    "SyncClient",
    "SyncPublisher",
    "TooManyRequestsError",
    "TransportError",
    "UnauthorizedError",
    "UnavailableError",
    "normalize_node",
    "queue_path",
]
