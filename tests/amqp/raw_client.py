"""Just enough of an AMQP client, frame by frame with pamqp, for the tests that must control exactly what
leaves in one write (acks with the close, a close crossing the server's, hostile frames)."""

from __future__ import annotations

import socket

from pamqp import commands, frame

from api.amqp.frame_io import PROTOCOL_HEADER
from cli.node_processes import HARNESS_PASSWORD, HARNESS_USER


class RawClient:
    """Frames written as given, read one at a time."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buffer = b""

    @classmethod
    def opened(cls, port: int, heartbeat: int = 0) -> RawClient:
        """A client past the opening (logged in as the harness administrator, tuned with `heartbeat`
        seconds between heartbeats, none by default, vhost `/` open) with channel 1 open."""
        client = cls(port)
        client.sock.sendall(PROTOCOL_HEADER)
        client.until(commands.Connection.Start)
        response = f"\0{HARNESS_USER}\0{HARNESS_PASSWORD}"
        client.send(
            (0, commands.Connection.StartOk(client_properties={}, mechanism="PLAIN", response=response))
        )
        client.until(commands.Connection.Tune)
        client.send((0, commands.Connection.TuneOk(channel_max=16, frame_max=131072, heartbeat=heartbeat)))
        client.send((0, commands.Connection.Open(virtual_host="/")))
        client.until(commands.Connection.OpenOk)
        client.send((1, commands.Channel.Open()))
        client.until(commands.Channel.OpenOk)
        return client

    def send(self, *frames: tuple[int, object]) -> None:
        self.sock.sendall(b"".join(frame.marshal(value, channel) for channel, value in frames))  # type: ignore[arg-type]

    def receive(self) -> object:
        while True:
            try:
                used, _, value = frame.unmarshal(self.buffer)
            except Exception:  # not a whole frame yet
                chunk = self.sock.recv(65536)
                assert chunk, "the connection ended"
                self.buffer += chunk
                continue
            self.buffer = self.buffer[used:]
            return value

    def until(self, kind: type) -> object:
        """The next frame of `kind`, skipping the others."""
        while not isinstance(value := self.receive(), kind):
            pass
        return value
