"""Where a request finds a queue: its definition in the metadata, the node leading it, and the door
(`QueueDoor`) of a queue this node leads; declaring and deleting queues through the metadata door."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from cluster.errors import BadRequest, NotLeader, QueueConflict, QueueNotFound
from cluster.hosts import host_of
from cluster.metadata.metadata_door import MetadataDoor
from cluster.metadata.metadata_view import MetadataView
from cluster.queues.placement import place_replicas
from cluster.queues.queue_door import QueueDoor, QueueFormats
from metadata_state.commands import Delete
from metadata_state.records import QueueInfo
from metadata_state.replies import Conflict, Created, Exists, Invalid, NotFound
from metadata_state.vhost_names import DEFAULT_VHOST, split
from queue_state.arguments import (
    ArgumentError,
    QueueConfig,
    QueueDefaults,
    differs_only_where_defaulted,
    parse_arguments,
)
from queue_state.command_codec import arguments_version

LEADER_WAIT_S = 10.0
PREFERRED_WAIT_S = 3.0
DECLARE_ATTEMPTS = 3
"""How many times a declare is sent at most: again as stored while the stored arguments differ from it
only where defaulted (they may change meanwhile)."""
LEADER_POLL_S = 0.02


class GroupLeaders(Protocol):
    """Who leads each Raft group, as this node knows (`RaftHost`)."""

    def leader_of(self, gid: str) -> str | None: ...


class ClusterView(Protocol):
    """This node's name, the cluster's members and metadata leader (`NodeStatus`)."""

    @property
    def name(self) -> str: ...

    def cluster_members(self) -> list[str]: ...

    def meta_leader(self) -> str | None: ...


def unknown_queue(name: str) -> str:
    """What says that queue `name` (a `qualified` name) is not declared."""
    vhost, name_in_it = split(name)
    return f"no queue '{name_in_it}'" + ("" if vhost == DEFAULT_VHOST else f" in vhost '{vhost}'")


class QueueDirectory:
    """Finds, declares and deletes queues for one node. `hosted` are the doors of the queues this node
    hosts (leading or following); `clock` is the wall clock in milliseconds that stamps a declaration;
    `formats` which queue operations version every node reads (`FormatVersions`)."""

    def __init__(
        self,
        metadata: MetadataView,
        hosted: Mapping[str, QueueDoor],
        groups: GroupLeaders,
        cluster: ClusterView,
        door: MetadataDoor,
        clock: Callable[[], int],
        formats: QueueFormats,
        defaults: QueueDefaults,
    ) -> None:
        self._defaults = defaults
        self._metadata = metadata
        self._hosted = hosted
        self._groups = groups
        self._cluster = cluster
        self._door = door
        self._clock = clock
        self._formats = formats

    def names(self) -> list[str]:
        """Every queue declared in the metadata, by name."""
        return sorted(self._metadata.queues)

    def info(self, name: str) -> QueueInfo:
        """A declared queue, or QueueNotFound."""
        info = self._metadata.queues.get(name)
        if info is None:
            raise QueueNotFound(unknown_queue(name))
        return info

    def leader_of(self, name: str) -> str | None:
        """The node leading a queue's group, when known (QueueNotFound for an undeclared queue). Not this
        node until its door serves the queue: elected, it first handles the election's outcome."""
        info = self.info(name)
        leader = self._groups.leader_of(info.group)
        if leader == self._cluster.name:
            door = self._hosted.get(name)
            if door is None or door.group != info.group or not door.is_leader:
                return None
        return leader

    async def leader_within(self, name: str, timeout: float) -> str | None:
        """The node leading a queue, waiting up to `timeout` while this node knows none (a new queue's
        first election, a failover); None when it still knows none (QueueNotFound once undeclared)."""
        await _polled(lambda: self.leader_of(name) is not None, timeout)
        return self.leader_of(name)

    def leading_door(self, name: str) -> QueueDoor:
        """The door of a queue this node leads, or NotLeader naming the leader when known."""
        info = self.info(name)
        queue = self._hosted.get(name)
        if queue is None or queue.group != info.group or not queue.is_leader:
            raise NotLeader(f"this node does not lead queue '{name}'", self.leader_of(name))
        return queue

    def hosted_door(self, name: str) -> QueueDoor | None:
        """The door of this node's replica of a queue, leading or following; None when it hosts none."""
        return self._hosted.get(name)

    def leading_doors(self) -> list[QueueDoor]:
        """The doors of the queues this node leads."""
        return [queue for queue in self._hosted.values() if queue.is_leader]

    async def declare(self, name: str, arguments: dict[str, Any], client_node: str | None) -> str:
        """Declare a queue through the metadata leader: 'created' or 'exists' (QueueConflict when it exists
        with other arguments), once its placed leader leads it (or a while has passed).

        A queue declared without `x-delivery-limit`, `x-quorum-initial-group-size` or
        `x-queue-leader-locator` gets this node's default for it (`QueueDefaults`) in its stored
        arguments; redeclaring it without one matches whatever value it has for it, or none
        (`differs_only_where_defaulted`): the declare is then sent again as stored, a few times should
        the stored arguments change meanwhile."""
        try:
            given = parse_arguments(arguments)
        except ArgumentError as exc:
            raise BadRequest(f"argument {exc.argument}: {exc.reason}") from exc
        self._formats.require_queue_ops(arguments_version(arguments), "none of these arguments")
        config = self._defaults.apply(given)
        for _ in range(DECLARE_ATTEMPTS):
            members = place_replicas(
                self._cluster.cluster_members(),
                self._metadata.queues.values(),
                size=config.initial_group_size,
                locator=config.leader_locator,
                client_node=client_node,
                host_of=lambda node: host_of(node, self._metadata.nodes),
                registered={node for node, info in self._metadata.nodes.items() if info.incarnation},
            )
            reply = await self._door.declare(name, config.to_arguments(), members, self._clock())
            stored = _stored_config(reply.arguments) if isinstance(reply, Conflict) else None
            if stored is None or stored == config or not differs_only_where_defaulted(given, stored):
                break
            config = stored  # declared as stored: it exists (or, deleted meanwhile, is created so)
        if isinstance(reply, Conflict):
            raise QueueConflict(f"queue '{name}' exists with different arguments {reply.arguments}")
        if isinstance(reply, Invalid):
            raise BadRequest(reply.reason)
        assert isinstance(reply, Created | Exists) and reply.group is not None, reply
        placed = self._metadata.queues.get(name)
        await self._await_leader(reply.group, placed.members[0] if placed and placed.members else None)
        return "created" if isinstance(reply, Created) else "exists"

    async def delete(self, name: str) -> None:
        """Delete a queue through the metadata leader."""
        reply = await self._door.delete(name, self.info(name).group)
        if isinstance(reply, NotFound):
            raise QueueNotFound(reply.reason)

    async def delete_sealed(self, name: str, group: str) -> None:
        """Delete a queue its leader sealed through the metadata (`QueueDoor.delete_if`), waiting until
        this node sees it gone; NotLeader when that takes too long (the leader's timer asks again)."""

        def gone() -> bool:
            info = self._metadata.queues.get(name)
            return info is None or info.group != group

        if not await self._door.relay_until(Delete(name, group), gone):
            reason = f"queue '{name}' is sealed; the metadata did not delete it in time (retried)"
            raise NotLeader(reason, self._cluster.meta_leader())

    async def _await_leader(self, group: str, preferred: str | None) -> None:
        """Wait for a new queue's preferred leader to lead it (any leader after a short while)."""
        started = asyncio.get_running_loop().time()

        def led() -> bool:
            leader = self._groups.leader_of(group)
            late = asyncio.get_running_loop().time() > started + PREFERRED_WAIT_S
            return leader is not None and (leader == preferred or late)

        await _polled(led, LEADER_WAIT_S)


def _stored_config(arguments: dict[str, Any]) -> QueueConfig | None:
    """A queue's configuration from its stored arguments (None should they no longer parse)."""
    try:
        return parse_arguments(arguments)
    except ArgumentError:
        return None


async def _polled(done: Callable[[], bool], timeout: float) -> None:
    """Check `done` every LEADER_POLL_S until it is true or `timeout` has passed."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not done() and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(LEADER_POLL_S)
