"""One AMQP 0-9-1 connection: the opening (protocol header, start, SASL, tune, open), heartbeats, its
channels, and its closing, with RabbitMQ's behaviour.

Frames are read one at a time, within the negotiated `frame_max`. Each channel serves its methods in
order in a task of its own, so a slow operation on one channel (a declare that waits for the metadata
leader) does not hold up another. An error of a channel closes that channel (`channel.close`; frames
on it are dropped until the client's `close-ok`), an error of the connection closes the connection
(`connection.close`, then the socket). A peer silent for two heartbeat intervals is gone. However a
connection ends, its channels end with it, and what their consumers and gets held returns to the
queues at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Iterable
from importlib.metadata import version
from typing import TypeVar

from aiohttp import web
from pamqp import commands
from pamqp.base import Frame
from pamqp.body import ContentBody
from pamqp.frame import FrameTypes
from pamqp.header import ContentHeader
from pamqp.heartbeat import Heartbeat

from api.amqp.byte_budget import ByteBudget
from api.amqp.channel import Channel
from api.amqp.frame_io import PROTOCOL_HEADER, WrongProtocol, encode_frame, read_frame, read_protocol_header
from api.amqp.negotiation import (
    CHANNEL_MAX,
    FRAME_MAX,
    FRAME_MIN,
    HEARTBEAT_S,
    LOCALES,
    MECHANISMS,
    Tuning,
    server_properties,
    settle_tuning,
)
from api.amqp.node_calls import NodeCalls
from api.amqp.reply_codes import (
    ACCESS_REFUSED,
    CHANNEL_ERROR,
    COMMAND_INVALID,
    CONNECTION_FORCED,
    INTERNAL_ERROR,
    NOT_ALLOWED,
    AmqpError,
    channel_error,
    connection_error,
)
from api.amqp.sasl import credentials
from api.app_keys import ALARMS, CONFIG, METADATA
from api.auth import Unauthenticated, admit_guest, password_login
from api.login_throttle import LoginThrottled
from cluster.config import is_loopback_host
from metadata_state.vhost_names import DEFAULT_VHOST

log = logging.getLogger(__name__)

VERSION = version("quorumq")
OPENING_TIMEOUT_S = 10.0  # RabbitMQ's handshake_timeout
CLOSE_OK_WAIT_S = 3.0  # how long a connection closed by the server waits for the client's close-ok
INBOX_FRAMES = 256  # frames a channel may have waiting before the connection reads no more
M = TypeVar("M", bound=Frame)


class AmqpConnection:
    """The node's side of one AMQP connection on `reader`/`writer`."""

    def __init__(
        self, app: web.Application, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self._app = app
        self._reader = reader
        self._writer = writer
        peer = writer.get_extra_info("peername")
        self._peer: str | None = peer[0] if isinstance(peer, tuple) else None
        self._tuning = Tuning(CHANNEL_MAX, FRAME_MAX, HEARTBEAT_S)
        self.frame_max = FRAME_MIN
        self._channels: dict[int, Channel] = {}
        self._inboxes: dict[int, asyncio.Queue[FrameTypes | None]] = {}
        self._workers: set[asyncio.Task[None]] = set()
        self._closing: set[int] = set()  # channels the server closed, waiting for the client's close-ok
        self._rooms: dict[int, asyncio.Event] = {}  # set while a channel's inbox has room
        self._closed_by_server = False  # connection.close sent: only close-ok counts now
        self._paused = False  # the reader waits for a channel's room (the client is held back)
        self._budget = ByteBudget()  # unconfirmed bodies of all its channels
        self._node: NodeCalls | None = None
        self._heard = False  # a frame arrived since the heartbeat loop last looked
        self._ending = False
        self._told_blocked = False  # the client said it takes connection.blocked (its capabilities)
        self._publishing = False  # alarms are told to a connection once it published, as on the stream
        self._told: dict[str, list[str]] = {}
        self._notices: set[asyncio.Task[None]] = set()
        self._unwatch: Callable[[], None] | None = None

    async def serve(self) -> None:
        """Serve the connection until it ends."""
        try:
            try:
                await read_protocol_header(self._reader)
            except WrongProtocol as exc:
                log.info("AMQP connection from %s refused: %s", self._peer, exc)
                self._writer.write(PROTOCOL_HEADER)
                return
            async with asyncio.timeout(OPENING_TIMEOUT_S):
                user = await self._open()
            log.info("AMQP connection from %s opened for user %s", self._peer, user)
            await self._run()
        except AmqpError as exc:
            await self._close_connection(exc)
            with contextlib.suppress(Exception):
                await self._run(heartbeats=False)  # until the client's close-ok, or the socket closes
        except (asyncio.IncompleteReadError, ConnectionError, TimeoutError):
            pass  # the peer went away, or never finished opening
        finally:
            await self._end()

    # -- opening ---------------------------------------------------------------------------------------

    async def _open(self) -> str:
        start = commands.Connection.Start(
            server_properties=server_properties(VERSION, self._app[CONFIG].node),
            mechanisms=MECHANISMS,
            locales=LOCALES,
        )
        await self.send(0, [start])
        start_ok = await self._expect(commands.Connection.StartOk)
        capabilities = (start_ok.client_properties or {}).get("capabilities")
        self._told_blocked = isinstance(capabilities, dict) and capabilities.get("connection.blocked") is True
        given = credentials(start_ok.mechanism, start_ok.response)
        config, metadata = self._app[CONFIG], self._app[METADATA]
        guest = functools.partial(admit_guest, config, metadata, is_loopback_host(self._peer or ""), False)
        try:
            principal = await password_login(self._app, given.user, given.password, self._peer, guest)
        except (Unauthenticated, LoginThrottled) as exc:
            raise connection_error(
                ACCESS_REFUSED,
                f"Login was refused using authentication mechanism {start_ok.mechanism}: {exc}",
            ) from None
        await self.send(0, [commands.Connection.Tune(CHANNEL_MAX, FRAME_MAX, HEARTBEAT_S)])
        tune_ok = await self._expect(commands.Connection.TuneOk)
        try:
            self._tuning = settle_tuning(
                Tuning(CHANNEL_MAX, FRAME_MAX, HEARTBEAT_S),
                tune_ok.channel_max,
                tune_ok.frame_max,
                tune_ok.heartbeat,
            )
        except ValueError as exc:
            raise connection_error(NOT_ALLOWED, str(exc)) from None
        self.frame_max = self._tuning.frame_max or FRAME_MAX
        opened = await self._expect(commands.Connection.Open)
        vhost = opened.virtual_host or DEFAULT_VHOST
        if not metadata.has_vhost(vhost):
            raise connection_error(NOT_ALLOWED, f"vhost '{vhost}' not found")
        if vhost != DEFAULT_VHOST and not principal.holds_rights_in(vhost):  # `/` refuses per operation
            raise connection_error(
                NOT_ALLOWED, f"access to vhost '{vhost}' refused for user '{principal.name}'"
            )
        self._node = NodeCalls(self._app, principal.name, vhost)
        await self.send(0, [commands.Connection.OpenOk()])
        self._unwatch = self._app[ALARMS].watch(self._alarms_changed)
        return principal.name

    async def _expect(self, kind: type[M]) -> M:
        """The next frame, which must be a `kind` on channel 0."""
        channel, frame = await read_frame(self._reader, self.frame_max)
        if channel != 0 or not isinstance(frame, kind):
            raise connection_error(
                COMMAND_INVALID, f"expected {kind.name}, got {getattr(frame, 'name', frame)}"
            )
        return frame

    # -- running ------------------------------------------------------------------------------------

    async def _run(self, heartbeats: bool = True) -> None:
        """Read frames until the connection is closed (by either side: after the server's
        `connection.close`, only the client's `close-ok` or `close` counts)."""
        beats = asyncio.create_task(self._heartbeats()) if heartbeats and self._tuning.heartbeat_s else None
        try:
            while True:
                channel, frame = await read_frame(self._reader, self.frame_max)
                self._heard = True
                if isinstance(frame, Heartbeat):
                    continue
                if channel == 0:
                    if await self._connection_method(frame):
                        return
                elif not self._closed_by_server:
                    await self._channel_frame(channel, frame)
        finally:
            if beats is not None:
                beats.cancel()

    async def _heartbeats(self) -> None:
        """Send a heartbeat every half interval; end the connection after two intervals of silence."""
        interval = self._tuning.heartbeat_s
        silent = 0.0
        while True:
            await asyncio.sleep(interval / 2)  # a timer: frames heard meanwhile only mark the client alive
            heard = self._heard or self._paused  # a client held back by the server is not silent
            self._heard = False
            silent = 0.0 if heard else silent + interval / 2
            if silent >= 2 * interval:
                log.info("AMQP connection from %s missed its heartbeats", self._peer)
                self._abort()
                return
            if not self._writer.is_closing():  # not waiting on a client that stopped reading
                self._writer.write(encode_frame(Heartbeat(), 0))

    async def _connection_method(self, frame: FrameTypes) -> bool:
        """Serve a frame on channel 0; True once the connection is closed."""
        if isinstance(frame, commands.Connection.Close):
            for channel in self._channels.values():
                channel.stop_deliveries()  # the client would drop them: no-ack messages would be lost
            if not self._closed_by_server:
                await self._finish_channels()
            await self.send(0, [commands.Connection.CloseOk()])
            return True
        if isinstance(frame, commands.Connection.CloseOk):
            return True
        if self._closed_by_server:
            return False
        raise connection_error(COMMAND_INVALID, f"{getattr(frame, 'name', frame)} is not served on channel 0")

    async def _channel_frame(self, number: int, frame: FrameTypes) -> None:
        if number in self._closing:  # dropped until the client's close-ok (its own close crossing ours
            if isinstance(frame, commands.Channel.Close):  # is answered, and its close-ok still awaited)
                await self.send(number, [commands.Channel.CloseOk()])
            elif isinstance(frame, commands.Channel.CloseOk):
                self._closing.discard(number)
            return
        if isinstance(frame, commands.Channel.Open):
            if number in self._channels or (self._tuning.channel_max and number > self._tuning.channel_max):
                raise connection_error(CHANNEL_ERROR, f"channel {number} cannot be opened")
            assert self._node is not None
            max_body = self._app[CONFIG].max_message_bytes
            self._channels[number] = Channel(number, self, self._node, max_body, self._budget)
            inbox: asyncio.Queue[FrameTypes | None] = asyncio.Queue()
            self._inboxes[number] = inbox
            self._rooms[number] = asyncio.Event()
            self._rooms[number].set()
            worker = asyncio.create_task(self._channel_worker(self._channels[number], inbox))
            self._workers.add(worker)
            worker.add_done_callback(self._workers.discard)
            await self.send(number, [commands.Channel.OpenOk()])
            return
        waiting = self._inboxes.get(number)
        if waiting is None:
            if isinstance(frame, commands.Channel.CloseOk):
                return  # a late answer to a close of ours that crossed the client's own
            raise connection_error(CHANNEL_ERROR, f"channel {number} is not open")
        waiting.put_nowait(frame)
        if waiting.qsize() >= INBOX_FRAMES:  # read no more until the channel caught up: TCP pushes back
            room = self._rooms[number]
            room.clear()
            self._paused = True
            try:
                await room.wait()
            finally:
                self._paused = False

    async def _channel_worker(self, channel: Channel, inbox: asyncio.Queue[FrameTypes | None]) -> None:
        """Serve one channel's frames in order until it closes (frames left once it closed are dropped).
        Acks that wait one after another are served together (one settle per consumer, not one per
        ack)."""
        pushed: list[FrameTypes | None] = []
        while True:
            room = self._rooms.get(channel.number)
            if room is not None and inbox.qsize() < INBOX_FRAMES // 2:
                room.set()
            frame = pushed.pop() if pushed else await inbox.get()
            if frame is None or channel.closed:
                return
            try:
                if isinstance(frame, commands.Channel.Close):
                    await self._forget(channel)
                    await self.send(channel.number, [commands.Channel.CloseOk()])
                    return
                if isinstance(frame, commands.Basic.Ack):
                    acks = [frame]
                    while not inbox.empty():
                        following = inbox.get_nowait()
                        if not isinstance(following, commands.Basic.Ack):
                            pushed.append(following)
                            break
                        acks.append(following)
                    await channel.ack(acks)
                elif isinstance(frame, ContentHeader):
                    await channel.header(frame)
                elif isinstance(frame, ContentBody):
                    await channel.body(frame)
                elif isinstance(frame, Frame):
                    await channel.method(frame)
                else:  # a heartbeat or protocol header on a channel
                    raise connection_error(COMMAND_INVALID, f"{frame.name} on channel {channel.number}")
            except AmqpError as exc:
                for waiting in pushed:  # back where refuse looks for a close that crossed
                    inbox.put_nowait(waiting)
                await self.refuse(channel.number, exc)
                return
            except Exception:
                log.exception("serving AMQP channel %d of %s", channel.number, self._peer)
                await self.refuse(
                    channel.number, channel_error(INTERNAL_ERROR, "the node failed to serve it")
                )
                return

    async def refuse(self, channel: int, error: AmqpError) -> None:
        """Close `channel` for `error` (the connection, for a connection error)."""
        if error.connection:
            await self._close_connection(error)
            return
        mine = self._channels.get(channel)
        if mine is None or channel in self._closing:
            return
        self._closing.add(channel)
        waiting, crossed = self._inboxes.get(channel), False
        while waiting is not None and not waiting.empty():  # what the client sent meanwhile is dropped,
            crossed |= isinstance(waiting.get_nowait(), commands.Channel.Close)  # but its close is answered
        close = commands.Channel.Close(reply_code=error.code, reply_text=error.text, class_id=0, method_id=0)
        await self.send(channel, [close, *([commands.Channel.CloseOk()] if crossed else [])])
        await self._forget(mine)

    async def _finish_channels(self) -> None:
        """Let every channel serve the frames that came before the client closed the connection (its
        last acks), for up to CLOSE_OK_WAIT_S, as RabbitMQ serves them before it closes."""
        for inbox in self._inboxes.values():
            inbox.put_nowait(None)
        if self._workers:
            await asyncio.wait(set(self._workers), timeout=CLOSE_OK_WAIT_S)

    async def _forget(self, channel: Channel) -> None:
        """The channel ends: it stops taking frames, and what it held returns."""
        self._channels.pop(channel.number, None)
        inbox = self._inboxes.pop(channel.number, None)
        if inbox is not None:
            inbox.put_nowait(None)
        room = self._rooms.pop(channel.number, None)
        if room is not None:
            room.set()  # a reader waiting for its room reads on (what follows is dropped)
        await channel.close()

    # -- resource alarms ------------------------------------------------------------------------------

    def publishing(self) -> None:
        """A channel of this connection published: from now on it is told of resource alarms."""
        if not self._publishing:
            self._publishing = True
            self._alarms_changed()

    def _alarms_changed(self) -> None:
        """Send `connection.blocked` (naming the nodes in alarm) when alarms begin or change, and
        `connection.unblocked` when the last ends, to a client that takes them and has published."""
        alarmed = self._app[ALARMS].alarmed()
        if not self._told_blocked or not self._publishing or self._ending or alarmed == self._told:
            return
        self._told = alarmed
        if alarmed:
            nodes = "; ".join(f"{node}: {', '.join(alarms)}" for node, alarms in alarmed.items())
            notice: Frame = commands.Connection.Blocked(reason=f"resource alarm ({nodes})"[:255])
        else:
            notice = commands.Connection.Unblocked()
        task = asyncio.get_running_loop().create_task(self.send(0, [notice]))
        self._notices.add(task)
        task.add_done_callback(self._notices.discard)

    # -- writing and closing ------------------------------------------------------------------------

    async def send(self, channel: int, frames: Iterable[FrameTypes]) -> None:
        """Write `frames` on `channel` together, then wait while the client is behind."""
        await self.write(b"".join(encode_frame(frame, channel) for frame in frames))

    async def write(self, encoded: bytes) -> None:
        """Write frames encoded already, then wait while the client is behind."""
        if self._writer.is_closing():
            return
        self._writer.write(encoded)
        with contextlib.suppress(ConnectionError):
            await self._writer.drain()

    async def _close_connection(self, error: AmqpError) -> None:
        """Send `connection.close` for `error`. The reader then waits for the client's close-ok, for
        CLOSE_OK_WAIT_S at most: the socket closes then."""
        if self._closed_by_server or self._ending:
            return
        self._closed_by_server = True
        log.info("AMQP connection from %s closed: %s", self._peer, error.text)
        asyncio.get_running_loop().call_later(CLOSE_OK_WAIT_S, self._abort)
        for channel in self._channels.values():
            channel.stop_deliveries()
        for room in self._rooms.values():
            room.set()  # a reader waiting for a channel's room reads on, to the close-ok
        close = commands.Connection.Close(
            reply_code=error.code, reply_text=error.text, class_id=0, method_id=0
        )
        if not self._writer.is_closing():
            self._writer.write(encode_frame(close, 0))  # not waiting on a client that may not read

    async def _end(self) -> None:
        """The connection is over: its channels end (what they held returns), the socket closes."""
        self._ending = True
        if self._unwatch is not None:
            self._unwatch()
        workers = list(self._workers)
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        for channel in list(self._channels.values()):
            await self._forget(channel)
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()

    def _abort(self) -> None:
        """End the connection now, whatever the client reads or writes: the reader fails at once."""
        for room in self._rooms.values():
            room.set()
        self._writer.transport.abort()

    async def shutdown(self) -> None:
        """The node stops: tell the client (CONNECTION_FORCED), as RabbitMQ does when it shuts down."""
        await self._close_connection(connection_error(CONNECTION_FORCED, "broker forced connection closure"))
