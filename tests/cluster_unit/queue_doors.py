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


class AloneHost:
    """A door's node that does nothing beyond the queue (the workers beside the leader left out)."""

    def new_token(self) -> str:
        return uuid.uuid4().hex

    def dead_lettered(self, *_: object) -> None:
        pass

    def request_delete(self, *_: object) -> None:
        pass

    async def delete_sealed(self, *_: object) -> None:
        pass

    def leadership_changed(self, *_: object) -> None:
        pass

    def queue_changed(self, *_: object) -> None:
        pass

    def redrive_started(self, *_: object) -> None:
        pass

    def check_publish(self, *_: object) -> None:
        pass


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
        node=AloneHost(),
        formats=formats or every_node_reads_this_version(node.name),
        consumer_timeout_ms=60_000,
        consumer_idle_timeout_ms=idle_timeout_ms,
    )


def texts(*bodies: str) -> list[tuple[StoredMessage, int | None]]:
    return [(StoredMessage(body.encode(), {}, "utf8"), None) for body in bodies]


async def lead(nodes: dict[str, Node], doors: dict[str, QueueDoor], name: str) -> None:
    nodes[name].host.campaign(GROUP)
    await eventually(lambda: doors[name].is_leader, f"{name} to lead")
