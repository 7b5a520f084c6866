"""A queue's replica and its door (`QueueDoor`) on each node of a gated cluster, as a node builds them
(the workers beside the leader left out), with the real record of what each peer said it reads."""

from __future__ import annotations

import time
import uuid

from gated_cluster import GROUP, NAMES, Node
from support.eventually import eventually

from cluster.queues.leader_clock import LeaderClock, monotonic_ms
from cluster.queues.queue_door import QueueDoor
from cluster.queues.queue_replica import QueueReplica
from cluster.replication.format_versions import FormatVersions
from cluster.replication.stored_message import StoredMessage
from queue_state.arguments import QueueConfig
from raft_log.storage.node_store import GroupLog

QUEUE = "q"


def queue_replica(name: str, group_log: GroupLog) -> QueueReplica:
    return QueueReplica(QUEUE, GROUP, QueueConfig(), group_log)


async def _nothing(*_: object) -> None:
    return None


def every_node_reads_this_version(name: str) -> FormatVersions:
    """Node `name`'s record of its peers, each linked and having said it reads what this node reads."""
    formats = FormatVersions(name, lambda: NAMES, lambda _: True)
    for peer in NAMES:
        formats.on_control(peer, formats.announcement())
    return formats


def door_of(node: Node, formats: FormatVersions | None = None, idle_timeout_ms: int = 60_000) -> QueueDoor:
    """The queue's door on `node` (`formats`: by default, every node reads this version)."""
    return QueueDoor(
        QUEUE,
        GROUP,
        node.app,
        node.host,
        LeaderClock(lambda: int(time.time() * 1000), monotonic_ms),
        on_dead_letter=lambda *_: None,
        request_delete=lambda *_: None,
        delete_sealed=_nothing,
        on_leadership=lambda *_: None,
        on_redrive=lambda _: None,
        formats=formats or every_node_reads_this_version(node.name),
        consumer_timeout_ms=60_000,
        consumer_idle_timeout_ms=idle_timeout_ms,
        new_token=lambda: uuid.uuid4().hex,
    )


def texts(*bodies: str) -> list[tuple[StoredMessage, int | None]]:
    return [(StoredMessage(body.encode(), {}, "utf8"), None) for body in bodies]


async def lead(nodes: dict[str, Node], doors: dict[str, QueueDoor], name: str) -> None:
    nodes[name].host.campaign(GROUP)
    await eventually(lambda: doors[name].is_leader, f"{name} to lead")
