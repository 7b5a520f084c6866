"""What a node takes from the world around it: clocks, randomness, its database, its peer links and
readings of what it uses of the machine.

Production passes the real ones (`production_environment`); the whole-node simulation
(`node_simulation`, docs/decisions/0017) passes virtual clocks, seeded randomness, a simulated
disk and a simulated network, so that one seed replays a run exactly. Elapsed time inside a node
(deadlines, long polls, backoffs) is the event loop's time, not part of this.
"""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, Protocol

from cluster.config import Address, NodeConfig
from cluster.queues.leader_clock import monotonic_ms
from cluster.replication.entry_codec import QUEUE_OP_VERSION
from cluster.replication.peer_links import PeerLinks
from cluster.replication.raft_host import exit_on_fatal
from cluster.replication.transport import FrameHandler, Transport
from cluster.resource_usage import ResourceUsage, read_usage
from cluster.security.tls import raft_contexts
from cluster.store.store_damage import Damage, open_store, stop_on_damage
from metadata_state.codec import CODEC_VERSION as METADATA_CODEC_VERSION
from raft_log.storage.node_store import NodeStore
from raft_log.types import StorageError

TOKEN_BYTES = 16


class PeerTransport(PeerLinks, Protocol):
    """What a node needs of its links to peers (`cluster.replication.transport.Transport`)."""

    incarnation: str  # set once the database is open, before `start`

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def set_peer(self, name: str, address: Address) -> None: ...

    def remove_peer(self, name: str) -> None: ...

    def linked(self, name: str) -> bool: ...


TransportFactory = Callable[[NodeConfig, FrameHandler, Callable[[str], None]], PeerTransport]
"""Builds a node's links from its settings, the handler of received frames and of lost links."""


@dataclass(frozen=True)
class NodeEnvironment:
    """The clocks, randomness, database, peer links and resource readings of one node.

    `wall_ms` is the wall clock in ms since the epoch (leaders stamp it, bounded by `monotonic_ms`:
    `LeaderClock`); `rng` seeds Raft's election timeouts and where the node's peer requests are numbered
    from; `new_token` makes consumer tags, get holders and worker ids (capabilities: unguessable in
    production); `open_store` opens the database in a data directory; `on_fatal` ends the process on an
    error it cannot survive, `on_damage` on damage met at runtime in the database of a data directory
    (decision 0011: a synced marker, then exit); `read_usage` reads what the node uses of the machine,
    given its data directory (its resource alarms read it every second); `reads_queue_ops` and
    `reads_metadata` are the newest queue operations and metadata codec versions the node reads and
    writes (its build's: the simulation runs older builds; both read snapshots of every version)."""

    wall_ms: Callable[[], int]
    monotonic_ms: Callable[[], float]
    rng: random.Random
    new_token: Callable[[], str]
    open_store: Callable[[Path, int], tuple[NodeStore, Damage | None]]
    transport: TransportFactory
    on_fatal: Callable[[str], NoReturn]
    read_usage: Callable[[Path], ResourceUsage]
    on_damage: Callable[[Path, StorageError], NoReturn] = stop_on_damage
    reads_queue_ops: int = QUEUE_OP_VERSION
    reads_metadata: int = METADATA_CODEC_VERSION


def wall_clock_ms() -> int:
    """Milliseconds since the epoch on this machine's wall clock."""
    return int(time.time() * 1000)


def _tcp_transport(
    config: NodeConfig, on_frame: FrameHandler, on_link_lost: Callable[[str], None]
) -> Transport:
    return Transport(
        config.node,
        config.raft,
        config.cluster_secret,
        on_frame,
        tls=raft_contexts(config),
        on_link_lost=on_link_lost,
    )


def _token() -> str:
    return secrets.token_hex(TOKEN_BYTES)


def production_environment() -> NodeEnvironment:
    """The real world: system clocks, OS randomness, RocksDB on disk, TCP (TLS when configured)."""
    return NodeEnvironment(
        wall_ms=wall_clock_ms,
        monotonic_ms=monotonic_ms,
        rng=random.Random(),
        new_token=_token,
        open_store=open_store,
        transport=_tcp_transport,
        on_fatal=exit_on_fatal,
        read_usage=read_usage,
    )
