"""The AMQP 0-9-1 listener of a node: a TCP server on the node's `amqp` address whose every connection
is an `AmqpConnection`, started beside the HTTP API (`cli.node_lifecycle`) and closed before it."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from aiohttp import web

from api.amqp.connection import AmqpConnection
from cluster.config import Address

log = logging.getLogger(__name__)


class AmqpListener:
    """The listening socket and the connections it accepted."""

    def __init__(self, app: web.Application) -> None:
        self._app = app
        self._server: asyncio.Server | None = None
        self._connections: dict[AmqpConnection, asyncio.Task[None]] = {}

    async def start(self, address: Address) -> None:
        """Listen on `address`."""
        self._server = await asyncio.start_server(self._accept, address.host, address.port)
        log.info("AMQP 0-9-1 listener on %s", address)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = AmqpConnection(self._app, reader, writer)
        task = asyncio.current_task()
        assert task is not None
        self._connections[connection] = task
        try:
            await connection.serve()
        finally:
            self._connections.pop(connection, None)

    async def close(self) -> None:
        """Stop listening, close every connection (CONNECTION_FORCED) and wait for them to end."""
        if self._server is not None:
            self._server.close()
        connections = dict(self._connections)
        for connection in connections:
            with contextlib.suppress(Exception):
                await connection.shutdown()
        for task in connections.values():
            task.cancel()
        await asyncio.gather(*connections.values(), return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
