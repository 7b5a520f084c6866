"""How the simulation's clients make requests: to the node they believe leads, as the quorumq client does.

A request that meets a node that does not lead goes to the leader it names; a client gives up on an
answer after its timeout (`GaveUp`).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from cluster.errors import NotLeader
from cluster.node import Node
from cluster.queues.queue_door import QueueDoor

if TYPE_CHECKING:
    from node_simulation.simulation import NodeSimulation

T = TypeVar("T")

REQUEST_TIMEOUT_S = 10.0  # a client gives up on an answer after this (as the quorumq client does)


class GaveUp(Exception):
    """A client stopped waiting for an answer."""


class ClientRequests:
    """The clients' way to the nodes: which node each queue's leader is believed to be (`hint`), whether
    they still make requests (`active`), and whether the queues are declared (`declared`)."""

    def __init__(self, sim: NodeSimulation, rng: random.Random) -> None:
        self.sim = sim
        self.rng = rng
        self.hint: dict[str, str] = {}  # queue -> the leader last heard of
        self.active = True
        self.declared = asyncio.Event()

    def node_for(self, queue: str | None) -> str:
        """The node to ask about `queue`: mostly the leader last heard of, else any."""
        hint = self.hint.get(queue) if queue is not None else None
        if hint is not None and self.rng.random() < 0.9:
            return hint
        return self.rng.choice(sorted(self.sim.nodes))

    async def ask(self, name: str, call: Callable[[Node], Awaitable[T]]) -> T:
        """`call` on node `name`, or GaveUp after the client's timeout."""
        try:
            return await asyncio.wait_for(self.sim.request(name, call), REQUEST_TIMEOUT_S)
        except TimeoutError as exc:
            raise GaveUp(f"no answer from {name} within {REQUEST_TIMEOUT_S} s") from exc

    async def about(self, name: str, queue: str, call: Callable[[Node], Awaitable[T]]) -> T:
        """`call` on node `name`, a request about `queue` (NotLeader there updates the belief)."""
        try:
            return await self.ask(name, call)
        except NotLeader as exc:
            if exc.leader is not None:
                self.hint[queue] = exc.leader
            raise

    async def at_door(self, name: str, queue: str, call: Callable[[QueueDoor], Awaitable[T]]) -> T:
        """`call` on the door of `queue` at node `name` (NotLeader there updates the belief)."""

        async def on_door(node: Node) -> T:
            return await call(node.directory.leading_door(queue))

        return await self.about(name, queue, on_door)

    async def pause(self, most_s: float = 0.2) -> None:
        """A client's pause between two requests."""
        await asyncio.sleep(self.rng.uniform(0.001, most_s))
