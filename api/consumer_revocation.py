"""Consumers end once their owner may no longer read their queue: the user was deleted, or its read
permission no longer covers the queue (W6).

Every request of an HTTP consumer is authorised anew, so a revoked owner is refused at once; this ends
the consumer too, so that what it holds goes back to the queue now rather than at its idle timeout. Each
time the users change, the node's leader of each queue cancels the consumers (by the owner their tags
name, `cluster.queues.consumer_names`) whose owner lost the right. Durable consumers are kept: they never time
out, and their position is their owner's, for when it may read again. Consumers of no owner (registered
by an earlier version) are left to their idle timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Hashable

from aiohttp import web

from api.access import Access
from api.app_keys import CONFIG, METADATA, QUEUES
from api.auth import Unauthenticated, vouched_principal
from cluster.config import NodeConfig
from cluster.errors import NodeError
from cluster.metadata.metadata_view import MetadataView
from cluster.queues.consumer_names import owner_of
from cluster.queues.queue_directory import QueueDirectory

log = logging.getLogger(__name__)


class ConsumerRevocation:
    """Cancels, on the queues this node leads, the consumers whose owner lost read permission."""

    def __init__(self, config: NodeConfig, metadata: MetadataView, queues: QueueDirectory) -> None:
        self._config = config
        self._metadata = metadata
        self._queues = queues
        self._users = self._users_now()
        self._sweep: asyncio.Task[None] | None = None
        self._again = False

    def metadata_changed(self) -> None:
        """A metadata watcher: sweep once the users changed (again after a sweep under way)."""
        users = self._users_now()
        if users == self._users:
            return
        self._users = users
        if self._sweep is not None and not self._sweep.done():
            self._again = True
            return
        self._sweep = asyncio.get_running_loop().create_task(self._sweep_all())

    def close(self) -> None:
        if self._sweep is not None:
            self._sweep.cancel()

    async def _sweep_all(self) -> None:
        self._again = True
        while self._again:
            self._again = False
            for queue in self._queues.leading_doors():
                for consumer in queue.consumer_list():
                    owner = owner_of(consumer.tag)
                    if consumer.durable or owner is None or self._may_read(owner, queue.name):
                        continue
                    log.info(
                        "queue %s: consumer %s ended: its owner may no longer read", queue.name, consumer.tag
                    )
                    with contextlib.suppress(NodeError):  # gone meanwhile, or no longer led here
                        await queue.cancel(consumer.tag)

    def _may_read(self, owner: str, queue: str) -> bool:
        try:
            return vouched_principal(self._config, self._metadata, owner).may(Access.READ, queue)
        except Unauthenticated:
            return False

    def _users_now(self) -> Hashable:
        """What of the users decides reading: who exists, with which read pattern in each vhost and tags."""
        return frozenset(
            (
                u.name,
                tuple((vhost, read) for vhost, (_, _, read) in u.all_permissions().items()),
                tuple(u.tags),
            )
            for u in self._metadata.users.values()
        )


async def end_revoked_consumers(app: web.Application) -> AsyncIterator[None]:
    """Cleanup context: a `ConsumerRevocation` watching the metadata while the application runs."""
    revocation = ConsumerRevocation(app[CONFIG], app[METADATA], app[QUEUES])
    unwatch = app[METADATA].watch(revocation.metadata_changed)
    yield
    unwatch()
    revocation.close()
