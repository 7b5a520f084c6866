"""The routing and vhost changes the simulation's clients make, as their HTTP handlers make them: on the
metadata leader, once every node reads exchanges and bindings (vhosts)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from cluster.node import Node
from metadata_state.codec import EXCHANGE_CODEC_VERSION, VHOST_CODEC_VERSION
from metadata_state.records import QUEUE_DESTINATION, BindingRecord
from metadata_state.vhost_names import DEFAULT_VHOST


def declare_vhost(vhost: str) -> Callable[[Node], Awaitable[object]]:
    """Declare `vhost`."""

    async def declare(node: Node) -> object:
        node.formats.require_metadata(VHOST_CODEC_VERSION, "no vhosts")
        return await node.metadata_door.declare_vhost(vhost, "", [])

    return declare


def declare_exchange(exchange: str, kind: str) -> Callable[[Node], Awaitable[object]]:
    """Declare `exchange` of type `kind` in vhost `/`."""

    async def declare(node: Node) -> object:
        node.formats.require_metadata(EXCHANGE_CODEC_VERSION, "no exchanges")
        return await node.metadata_door.declare_exchange(
            DEFAULT_VHOST, exchange, kind, True, False, False, {}
        )

    return declare


def bind(exchange: str, queue: str) -> Callable[[Node], Awaitable[object]]:
    """Bind `queue` to `exchange` with the empty routing key."""

    async def bound(node: Node) -> object:
        node.formats.require_metadata(EXCHANGE_CODEC_VERSION, "no exchanges")
        binding = BindingRecord(DEFAULT_VHOST, exchange, queue, QUEUE_DESTINATION, "", {})
        return await node.metadata_door.bind(binding)

    return bound
