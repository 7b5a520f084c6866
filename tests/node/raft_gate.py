"""A TCP proxy in front of a node's Raft port that can cut one peer off in one direction.

The node advertises the gate's port, so every peer dials it through the gate. A peer dials with a
`hello` frame naming itself; after `drop_from(peer)` the gate throws away whatever that peer sends
(a one-way partition: the node still reaches the peer over its own connection, so the peer keeps
hearing from it and never starts an election). `heal(peer)` closes the peer's connections through the
gate, so that it dials again and is heard from once more.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct

import msgpack

from cli.node_processes import NodeProcess, free_ports

_FRAME_HEADER = struct.Struct(">I")
_CHUNK = 65536


class RaftGate:
    """The proxy for one node; `address` is what the node advertises and its peers dial."""

    def __init__(self, node: NodeProcess) -> None:
        self.node = node
        self.port = free_ports(1)[0]
        self._dropped: set[str] = set()
        self._connections: dict[asyncio.StreamWriter, str] = {}
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task] = set()

    @property
    def address(self) -> str:
        return f"{self.node.host}:{self.port}"

    def advertise(self) -> None:
        """Make the node register (and so be dialled at) the gate's address."""
        self.node.extra_args += ["--advertise-raft", self.address]

    def drop_from(self, peer: str) -> None:
        """From now on, discard every byte `peer` sends to the node."""
        self._dropped.add(peer)

    def heal(self, peer: str) -> None:
        """Stop dropping what `peer` sends, closing its connections (cut mid-frame) so that it dials anew."""
        self._dropped.discard(peer)
        for writer, dialer in list(self._connections.items()):
            if dialer == peer:
                writer.close()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.node.host, self.port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, dialer: asyncio.StreamReader, back: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            reader, writer = await asyncio.open_connection(self.node.host, self.node.raft_port)
        except OSError:  # the node is not listening yet: the peer dials again
            back.close()
            self._tasks.discard(task)
            return
        try:
            await asyncio.gather(self._from_dialer(dialer, back, writer), self._pipe(reader, back))
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self._connections.pop(back, None)
            writer.close()
            back.close()
            self._tasks.discard(task)

    async def _from_dialer(
        self, dialer: asyncio.StreamReader, back: asyncio.StreamWriter, writer: asyncio.StreamWriter
    ) -> None:
        header = await dialer.readexactly(_FRAME_HEADER.size)
        hello = await dialer.readexactly(_FRAME_HEADER.unpack(header)[0])
        name = msgpack.unpackb(hello, raw=False)[1]  # ["hello", name, dialled, nonce, incarnation, proof]
        self._connections[back] = name
        writer.write(header + hello)
        await self._pipe(dialer, writer, name)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, name: str = "") -> None:
        while data := await reader.read(_CHUNK):
            if name not in self._dropped:
                writer.write(data)
                await writer.drain()
        with contextlib.suppress(OSError):
            writer.write_eof()
