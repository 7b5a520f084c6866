"""The network of the whole-node simulation: the peer transport's frames between node processes.

Each ordered pair of nodes has a link that behaves as the TCP connection
`cluster.replication.transport.Transport` keeps: frames arrive in the order they were sent, after a latency
the seed draws, at the process that runs on the other side when they arrive. A link goes down when either
side's process ends, when a partition separates the two, or when the simulation breaks it; frames in flight on
it are lost, and each side is told (`on_link_lost`) as a closed connection tells it. A link comes back, as a
redial does, once both sides run and nothing separates them; the process on the other side then proves its
incarnation, as its hello does.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from cluster.config import Address, NodeConfig
from cluster.replication.transport import FrameHandler

REDIAL_S = 0.05
LOST_NOTICE_S = 0.01  # how long a closed connection takes to be noticed


@dataclass(eq=False)
class _Link:
    """One direction between two nodes. `epoch` changes whenever the link goes down: a frame sent in an
    earlier epoch is lost."""

    epoch: int = 0
    up: bool = False
    last_arrival: float = 0.0


@dataclass(eq=False)
class SimTransport:
    """One node process's links (`cluster.node_environment.PeerTransport`)."""

    network: SimNetwork
    node: str
    on_frame: FrameHandler
    on_link_lost: Callable[[str], None]
    context: contextvars.Context
    incarnation: str = ""
    known: dict[str, Address] = field(default_factory=dict)
    started: bool = False

    async def start(self) -> None:
        self.started = True
        self.network.attach(self)

    async def stop(self) -> None:
        self.network.detach(self.node)

    def set_peer(self, name: str, address: Address) -> None:
        if name != self.node:
            self.known[name] = address
            self.network.refresh()

    def remove_peer(self, name: str) -> None:
        self.known.pop(name, None)
        self.network.refresh()

    def peers(self) -> dict[str, bool]:
        return {name: self.network.is_up(self.node, name) for name in self.known}

    def linked(self, name: str) -> bool:
        return self.network.is_up(self.node, name) and self.network.is_up(name, self.node)

    def peer_incarnation(self, name: str) -> str:
        return self.network.proved.get((self.node, name), "")

    def send(self, to: str, group: str, kind: int, *body: bytes) -> bool:
        if to not in self.known:
            return False
        self.network.send(self.node, to, kind, b"".join(body))
        return True


class SimNetwork:
    """Every node's links; `rng` draws latencies (the simulation's seed)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, rng: random.Random) -> None:
        self._loop = loop
        self._rng = rng
        self._endpoints: dict[str, SimTransport] = {}
        self._links: dict[tuple[str, str], _Link] = {}
        self._side: dict[str, int] = {}
        self.proved: dict[tuple[str, str], str] = {}  # (node, peer): the incarnation the peer proved
        self.delivered = 0
        self.trace = hashlib.sha256()  # of every frame delivered, in order: equal for two runs of a seed
        self.slow = 0.02  # the share of frames that take up to 50 ms

    def transport(
        self, config: NodeConfig, on_frame: FrameHandler, on_link_lost: Callable[[str], None]
    ) -> SimTransport:
        """A node process's links (called in that process's context, which deliveries run in)."""
        return SimTransport(self, config.node, on_frame, on_link_lost, contextvars.copy_context())

    # -- endpoints ----------------------------------------------------------------------------------

    def attach(self, endpoint: SimTransport) -> None:
        self._endpoints[endpoint.node] = endpoint
        self.refresh()

    def detach(self, name: str) -> None:
        """`name`'s process ended: its links go down (the other sides notice)."""
        self._endpoints.pop(name, None)
        self.refresh()

    def partition(self, sides: dict[str, int]) -> None:
        self._side = dict(sides)
        self.refresh()

    def heal(self) -> None:
        self._side = {}
        self.refresh()

    def break_link(self, a: str, b: str) -> None:
        """Both connections between `a` and `b` close (a reset); they are redialled."""
        for pair in ((a, b), (b, a)):
            self._down(pair)
        self._loop.call_at(self._loop.time() + REDIAL_S, self.refresh, context=contextvars.Context())

    def is_up(self, frm: str, to: str) -> bool:
        link = self._links.get((frm, to))
        return link is not None and link.up

    def refresh(self) -> None:
        """Bring each link up or down by what runs and what separates the nodes."""
        names = sorted(self._endpoints.keys() | {n for a, b in self._links for n in (a, b)})
        for frm in names:
            for to in names:
                if frm == to:
                    continue
                should = self._can_connect(frm, to)
                link = self._links.setdefault((frm, to), _Link())
                if should and not link.up:
                    link.up = True
                    self.proved[(frm, to)] = self._endpoints[to].incarnation
                elif not should and link.up:
                    self._down((frm, to))

    def _can_connect(self, frm: str, to: str) -> bool:
        a, b = self._endpoints.get(frm), self._endpoints.get(to)
        return (
            a is not None
            and b is not None
            and to in a.known
            and frm in b.known  # the dialled side refuses a hello from a name it does not know
            and self._side.get(frm, 0) == self._side.get(to, 0)
        )

    def _down(self, pair: tuple[str, str]) -> None:
        link = self._links.setdefault(pair, _Link())
        was_up, link.up = link.up, False
        link.epoch += 1
        if not was_up:
            return
        for side, peer in (pair, pair[::-1]):
            endpoint = self._endpoints.get(side)
            if endpoint is not None:
                self._loop.call_at(
                    self._loop.time() + LOST_NOTICE_S,
                    self._tell_lost,
                    endpoint,
                    peer,
                    context=endpoint.context,
                )

    def _tell_lost(self, endpoint: SimTransport, peer: str) -> None:
        if self._endpoints.get(endpoint.node) is endpoint:
            endpoint.on_link_lost(peer)

    # -- frames -------------------------------------------------------------------------------------

    def send(self, frm: str, to: str, kind: int, body: bytes) -> None:
        link = self._links.get((frm, to))
        if link is None or not link.up:
            return  # a connection being redialled: the transport drops what it queued
        latency = self._rng.uniform(0.0001, 0.002)
        if self._rng.random() < self.slow:
            latency = self._rng.uniform(0.002, 0.05)
        arrival = max(self._loop.time() + latency, link.last_arrival)
        link.last_arrival = arrival
        receiver = self._endpoints[to]
        self._loop.call_at(
            arrival, self._arrive, receiver, frm, link, link.epoch, kind, body, context=receiver.context
        )

    def _arrive(
        self, receiver: SimTransport, frm: str, link: _Link, epoch: int, kind: int, body: bytes
    ) -> None:
        if link.epoch != epoch or self._endpoints.get(receiver.node) is not receiver:
            return  # the connection it travelled on closed meanwhile
        self.delivered += 1
        self.trace.update(f"{self._loop.time()!r}:{frm}>{receiver.node}:{kind}:".encode())
        self.trace.update(body)
        receiver.on_frame(frm, kind, body)
