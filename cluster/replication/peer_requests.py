"""Requests one node makes of another over the peer transport, answered by reply frames.

A request is a frame `KIND_REQUEST` holding `[id, value]`, its answer a frame `KIND_REPLY` holding `[id,
value]` (msgpack values; what they mean is the server's: `serve`). Many are in flight at once per peer,
in the frames the transport already batches with Raft's; the reply travels on the peer's own connection.

A reply is matched to its call by id and peer. Each process numbers its calls from a random point of a
62-bit space, so a reply to a call of a previous process of this node (a peer still serving it when
this node restarted, then answering on the link to the new process) matches no call of the new one;
numbered from 1 in every process, a forwarded publish was answered with another publish's 201. Two
processes' ids meet only if their ranges overlap: about (calls made by both) / 2**62. The server only
echoes the id, so the wire is unchanged and a peer of an earlier version serves calls as before.

A node serves requests once it is given a server (`serve`), and says so to its peers in its control
frames (`{"peer_requests": 1}`, each second with the format versions). It calls a peer only while that
peer said so and both connections with it are up (`can_call`): a node of an earlier version ignores
frames of a kind it does not know, so a request sent to it would never be answered. What a peer said is
forgotten with its connection (a peer restarted at an earlier version says nothing).

A call whose frame could not be queued raises `NotLeader` (nothing was sent). Once sent, a call is given
up with `OutcomeUnknown` when either connection with the peer closes: the request or its reply may have
been lost, and whether the peer acted on it is unknown. A reply the server's node cannot queue (its
link down, its queue for the peer full) is lost like one dropped with a connection; the caller's own
rules give that call up (for a forwarded publish: the leader changed, or 90 s).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import msgpack

from cluster.errors import NotLeader, OutcomeUnknown
from cluster.replication.transport import KIND_REPLY, KIND_REQUEST

log = logging.getLogger(__name__)

CAPABILITY_KEY = "peer_requests"
CAPABILITY_VERSION = 1
QUEUE_GROUP = "peer-requests"  # the transport's fairness queue for these frames
ID_BITS = 62  # ids stay within msgpack's (and an earlier version's) integers however many calls follow

Server = Callable[[str, Any], Awaitable[Any]]


class RequestLinks(Protocol):
    """What peer requests need of the transport."""

    def send(self, to: str, group: str, kind: int, *body: bytes) -> bool:
        """Queue a frame for `to`; False when it cannot be sent."""
        ...

    def linked(self, name: str) -> bool:
        """Whether both connections with `name` are up."""
        ...


class PeerRequests:
    """Calls to peers and their replies; with a `serve`r, the requests peers make of this node."""

    def __init__(self, links: RequestLinks, first_id: int) -> None:
        """`first_id` numbers this process's first call (a random one of ID_BITS: `Node` draws it)."""
        self._links = links
        self._ids = itertools.count(first_id)  # this process's own range of ids
        self._pending: dict[int, tuple[str, asyncio.Future[Any]]] = {}
        self._serving: set[str] = set()  # peers that said they serve requests
        self._server: Server | None = None
        self._tasks: dict[asyncio.Task[None], None] = {}  # in the order served: stopped in that order

    def serve(self, server: Server) -> None:
        """Serve peers' requests with `server(peer, value) -> reply value` (it answers every request,
        errors included), and say so to peers from now on."""
        self._server = server

    def announcement(self) -> dict[str, int]:
        """What this node's control frames say of it (nothing before it serves)."""
        return {CAPABILITY_KEY: CAPABILITY_VERSION} if self._server is not None else {}

    def on_control(self, peer: str, control: Mapping[str, Any]) -> None:
        """Note whether a peer's control frame says it serves requests."""
        said = control.get(CAPABILITY_KEY)
        if type(said) is int and said >= CAPABILITY_VERSION:
            self._serving.add(peer)

    def can_call(self, peer: str) -> bool:
        """Whether `peer` said it serves requests and both connections with it are up."""
        return peer in self._serving and self._links.linked(peer)

    def call(self, peer: str, value: Any) -> asyncio.Future[Any]:
        """Send `value` to `peer`; the future is its reply. NotLeader (naming `peer`) when nothing could
        be sent; the future fails with OutcomeUnknown if a connection with the peer closes first."""
        if not self.can_call(peer):
            raise NotLeader(f"no link to {peer} to pass the request on", peer)
        request_id = next(self._ids)
        if not self._links.send(peer, QUEUE_GROUP, KIND_REQUEST, msgpack.packb([request_id, value])):
            raise NotLeader(f"the link to {peer} cannot take the request now", peer)
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = (peer, answer)
        answer.add_done_callback(functools.partial(self._forget, request_id))
        return answer

    def _forget(self, request_id: int, _: asyncio.Future[Any]) -> None:
        self._pending.pop(request_id, None)

    def link_lost(self, peer: str) -> None:
        """A connection with `peer` closed: its calls in flight are given up, and what it said forgotten."""
        self._serving.discard(peer)
        lost = [answer for to, answer in self._pending.values() if to == peer]
        for answer in lost:
            if not answer.done():
                answer.set_exception(
                    OutcomeUnknown(f"the link to {peer} closed before its answer came", peer)
                )

    def on_frame(self, peer: str, kind: int, body: bytes) -> None:
        """A request or reply frame from `peer`."""
        try:
            request_id, value = msgpack.unpackb(body, raw=False)
            if type(request_id) is not int:
                raise TypeError("the request id is not an integer")
        except (ValueError, TypeError, msgpack.UnpackException) as exc:
            log.warning("dropping a malformed peer request frame from %s: %s", peer, exc)
            return
        if kind == KIND_REPLY:
            pending = self._pending.get(request_id)
            if pending is not None and pending[0] == peer and not pending[1].done():
                pending[1].set_result(value)
        elif kind == KIND_REQUEST and self._server is not None:
            task = asyncio.get_running_loop().create_task(self._answer(peer, request_id, self._server, value))
            self._tasks[task] = None
            task.add_done_callback(lambda done: self._tasks.pop(done, None))

    async def _answer(self, peer: str, request_id: int, server: Server, value: Any) -> None:
        try:
            reply = await server(peer, value)
        except Exception:  # the server answers its own errors: this is a bug, the caller's wait bounded
            log.exception("serving request %d of %s failed", request_id, peer)
            return
        if not self._links.send(peer, QUEUE_GROUP, KIND_REPLY, msgpack.packb([request_id, reply])):
            log.warning("could not send the reply to request %d of %s", request_id, peer)

    async def stop(self) -> None:
        """Stop serving: requests being served are cancelled (their callers lose their answers)."""
        self._server = None
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
