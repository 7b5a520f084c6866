"""The AMQP 0-9-1 listener of a node: TCP servers on the node's `amqp` address and, over TLS with the
node's certificate, its `amqps` address, whose every connection is an `AmqpConnection`; started beside
the HTTP API (`cli.node_lifecycle`) and closed before it."""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from api.amqp.connection import CLOSE_OK_WAIT_S, AmqpConnection
from cluster.config import NodeConfig
from cluster.security.tls import amqps_server_context

log = logging.getLogger(__name__)


class AmqpListener:
    """The listening socket and the connections it accepted."""

    def __init__(self, app: web.Application) -> None:
        self._app = app
        self._servers: list[asyncio.Server] = []
        self._connections: dict[AmqpConnection, asyncio.Task[None]] = {}

    async def start(self, config: NodeConfig) -> None:
        """Listen on the addresses `config` gives (`amqp`, `amqps`), if any."""
        if config.amqp is not None:
            self._servers.append(await asyncio.start_server(self._accept, config.amqp.host, config.amqp.port))
            log.info("AMQP 0-9-1 listener on %s", config.amqp)
        if config.amqps is not None:
            tls = amqps_server_context(config)
            address = config.amqps
            self._servers.append(
                await asyncio.start_server(self._accept, address.host, address.port, ssl=tls)
            )
            log.info("AMQP 0-9-1 listener over TLS on %s", address)

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
        for server in self._servers:
            server.close()
        connections = dict(self._connections)
        await asyncio.gather(*(connection.shutdown() for connection in connections), return_exceptions=True)
        if connections:  # each waits for its client's close-ok, then the rest are cut
            await asyncio.wait(set(connections.values()), timeout=CLOSE_OK_WAIT_S)
        for task in connections.values():
            task.cancel()
        await asyncio.gather(*connections.values(), return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()
