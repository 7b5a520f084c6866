"""Publishing to a queue another node leads on this node's own behalf (dead letters, redrives): the
`RemotePublisher` the app gives its node. The publish takes the publish route's own way to the leader,
`api.publishing.publish_routed`, over the peer transport, as this node (`NODE_PRINCIPAL`).

A letter crosses the peer link once here and again as the log entries that replicate it, so a part of
dead letters (`cluster.queues.dead_lettering.messages.PUBLISH_BYTES`) is no larger a frame than its
replication. Without a peer link to the leader (down, or a leader too old to serve peer requests) the
publish fails and its letters wait in their source, retried."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiohttp import web

from api.publish_job import PublishJob
from api.publishing import publish_routed
from cluster.replication.stored_message import StoredMessage
from cluster.security.peer_auth import NODE_PRINCIPAL


class RemotePublishFailed(Exception):
    """The leader answered the publish, but did not confirm it."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(f"{status}: {body}")


class PeerRemotePublisher:
    """Publishes through the app's own publish path (`publish_routed`)."""

    def __init__(self, app: web.Application) -> None:
        self._app = app

    async def publish(
        self,
        queue: str,
        messages: Sequence[tuple[StoredMessage, int | None]],
        publisher: str | None,
        seq: int | None,
        priorities: Sequence[int] | None = None,
    ) -> None:
        """Publish to `queue` (each message at its priority with `priorities`); raises unless confirmed."""
        job = PublishJob(messages, publisher, seq, None, priorities)
        status, body = await publish_routed(self._app, queue, job, NODE_PRINCIPAL, 0)
        if status != 201:
            raise RemotePublishFailed(status, body)
