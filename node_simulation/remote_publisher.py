"""The `RemotePublisher` of a simulated node: dead letters to a queue led elsewhere go to the node at the
URL given, as a request to its publish route (`HttpRemotePublisher` sends the same over HTTP, asserted
as the node; here the request reaches the route past its authentication, as that node vouches)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from api.publish_job import PublishJob
from api.publishing import publish_routed
from api.remote_publisher import REMOTE_TIMEOUT_S
from cluster.node import Node
from cluster.replication.stored_message import StoredMessage
from cluster.security.peer_auth import NODE_PRINCIPAL

if TYPE_CHECKING:
    from node_simulation.simulation import NodeSimulation


class RemotePublishFailed(Exception):
    """The publish was answered, but not with a 201."""


class SimRemotePublisher:
    """Publishes through the simulated node whose API is at `via`."""

    def __init__(self, sim: NodeSimulation) -> None:
        self._sim = sim

    async def publish(
        self,
        via: str,
        queue: str,
        messages: Sequence[tuple[StoredMessage, int | None]],
        publisher: str | None,
        seq: int | None,
        priorities: Sequence[int] | None = None,
    ) -> None:
        job = PublishJob(messages, publisher, seq, None, priorities)

        async def routed(node: Node) -> tuple[int, dict[str, Any]]:
            return await publish_routed(self._sim.app_of(node), queue, job, NODE_PRINCIPAL, 0)

        status, body = await asyncio.wait_for(
            self._sim.request(self._sim.node_at(via), routed), REMOTE_TIMEOUT_S
        )
        if status != 201:
            raise RemotePublishFailed(f"{status}: {body}")
