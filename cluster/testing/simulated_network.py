"""The network of the driver simulation: frames in flight between named nodes, cut by partitions.

What is delivered, dropped, duplicated or delayed is the simulation's choice; this only holds the frames.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

FrameHandler = Callable[[str, str, int, bytes], None]
"""Called with (to, frm, kind, body) for a delivered frame."""


@dataclass(frozen=True, slots=True)
class Frame:
    frm: str
    to: str
    kind: int
    body: bytes


class SimulatedTransport:
    """What a `RaftHost` sends through: every frame joins the network's frames in flight."""

    def __init__(self, node: str, network: SimulatedNetwork) -> None:
        self._node = node
        self._network = network

    def send(self, to: str, group: str, kind: int, *body: bytes) -> bool:
        self._network.in_flight.append(Frame(self._node, to, kind, b"".join(body)))
        return True

    def peers(self) -> dict[str, bool]:
        return {name: True for name in self._network.names if name != self._node}

    @property
    def incarnation(self) -> str:
        """This node's current incarnation."""
        return self._network.incarnations.get(self._node, "")

    def peer_incarnation(self, name: str) -> str:
        """The incarnation `name` runs as now (the simulation's stand-in for the proved hello)."""
        return self._network.incarnations.get(name, "")


class SimulatedNetwork:
    """Frames in flight, and which side of a partition each node is on."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.in_flight: list[Frame] = []
        self.incarnations: dict[str, str] = {}  # each node's current incarnation (set by the simulation)
        self._side: dict[str, int] = {}

    def add(self, name: str) -> None:
        self.names.append(name)

    def transport(self, name: str) -> SimulatedTransport:
        return SimulatedTransport(name, self)

    def partition(self, sides: dict[str, int]) -> None:
        """Cut the network: frames between nodes on different sides are lost on delivery."""
        self._side = dict(sides)

    def heal(self) -> None:
        self._side = {}

    def duplicate(self, position: int, at: int) -> None:
        """Deliver the frame at `position` twice: a copy joins the frames in flight at `at`."""
        self.in_flight.insert(at, self.in_flight[position])

    def deliver(self, position: int, handler: FrameHandler) -> Frame | None:
        """Take the frame at `position` off the network and hand it over, unless a partition cuts it;
        returns the frame handed over."""
        frame = self.in_flight.pop(position)
        if self._side.get(frame.frm, 0) != self._side.get(frame.to, 0):
            return None
        handler(frame.to, frame.frm, frame.kind, frame.body)
        return frame
