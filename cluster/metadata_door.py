"""The node's one door for metadata proposals: typed proposals on the metadata leader, relays to it
from any node, and the codec version the metadata log is written in.

A relay travels to the metadata leader as a control frame, which the leader proposes:
`{"metadata": <encoded command>}`. Versions before the codec sent one key per command (`register`,
`set_arguments`, `expire`, `set_members`: the command's version-0 values without its tag). During a
rolling upgrade the leader still accepts those keys from older nodes, and a node sends them to a leader
that has not said it reads the codec (an older leader ignores the new key).

Every node tells its peers which codec version it reads (`{"metadata_codec": N}`, `announce`, each
second). The leader writes entries of CODEC_VERSION only once every other member of the metadata group
said it reads them, and version 0 before: an older node refuses a command it cannot decode, and its
metadata would part from the others'. A node never forgets what a peer said, so a node downgraded
under the same name must first be forgotten and wiped (its log holds entries it cannot read anyway).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from cluster.codec_reads import CodecReads
from cluster.metadata.codec import CODEC_VERSION, MetadataDecodeError, decode, encode
from cluster.metadata.commands import (
    BootstrapUsers,
    Command,
    Declare,
    Delete,
    DeleteUser,
    ForgetNode,
    PutUser,
    RegisterNode,
    SetMembers,
    SetPermissions,
)
from cluster.metadata.replies import Reply
from cluster.proposals import ProposalFailed, not_committed

log = logging.getLogger(__name__)

RELAY_KEY = "metadata"
CODEC_KEY = "metadata_codec"
# The control keys of versions before the codec, each with the command it carried.
OLDER_RELAY_KEYS = {
    "register": "register_node",
    "set_arguments": "set_arguments",
    "expire": "delete",
    "set_members": "set_members",
}
METADATA_WAIT_S = 10.0
RELAY_EVERY_S = 0.5


class ProposingHost(Protocol):
    """What the door needs of the node's Raft host."""

    @property
    def node(self) -> str: ...

    def submit(self, gid: str, op: Any) -> asyncio.Future[Any]: ...

    def leader_of(self, gid: str) -> str | None: ...

    def send_control(self, peer: str, control: dict[str, Any]) -> bool: ...


class MetadataDoor:
    """Proposes metadata commands for one node. `members()` names the metadata group's members (voters
    and learners)."""

    def __init__(self, host: ProposingHost, group: str, members: Callable[[], Iterable[str]]) -> None:
        self._host = host
        self._group = group
        self._members = members
        self._codec = CodecReads(CODEC_KEY, CODEC_VERSION)  # the codec version each peer said it reads

    # -- proposals on this node, the metadata leader: the reply once applied, NotLeader (or
    # OutcomeUnknown) when not committed ---------------------------------------------------------

    async def register_node(self, node: str, http: str, raft: str) -> Reply:
        """Register a joining node's addresses (its incarnation follows once it runs)."""
        return await self._submit(RegisterNode(node, http, raft))

    async def forget_node(self, node: str) -> Reply:
        """Remove a node from the registry."""
        return await self._submit(ForgetNode(node))

    async def declare(
        self, queue: str, arguments: dict[str, Any], members: list[str], created_ms: int
    ) -> Reply:
        """Declare a queue placed on `members`, created at the caller's wall clock `created_ms`."""
        return await self._submit(Declare(queue, arguments, tuple(members), created_ms))

    async def delete(self, queue: str, group: str) -> Reply:
        """Delete a queue if its group is still `group`."""
        return await self._submit(Delete(queue, group))

    async def set_members(self, queue: str, group: str, members: list[str], fence: tuple[int, int]) -> Reply:
        """List a queue's members, decided by its leader under `fence`."""
        return await self._submit(SetMembers(queue, group, tuple(members), fence))

    async def bootstrap_users(self, user: str, password_hash: str) -> Reply:
        """Initialise the user table once per cluster, with `user` as administrator unless ""."""
        return await self._submit(BootstrapUsers(user, password_hash))

    async def put_user(self, user: str, password_hash: str, tags: list[str]) -> Reply:
        """Create or update a user ("" keeps its password hash)."""
        return await self._submit(PutUser(user, password_hash, tuple(tags)))

    async def delete_user(self, user: str) -> Reply:
        """Delete a user."""
        return await self._submit(DeleteUser(user))

    async def set_permissions(self, user: str, configure: str, write: str, read: str) -> Reply:
        """Set a user's permission patterns."""
        return await self._submit(SetPermissions(user, configure, write, read))

    async def _submit(self, command: Command) -> Reply:
        try:
            reply: Reply = await self._host.submit(self._group, encode(command, self.log_version()))
        except ProposalFailed as exc:
            raise not_committed(exc) from exc
        return reply

    def log_version(self) -> int:
        """The codec version of the entries this node writes: CODEC_VERSION once every other member of
        the metadata group said it reads it, else 0."""
        return self._codec.version_for(m for m in self._members() if m != self._host.node)

    # -- relays: from any node, without a reply ----------------------------------------------------

    def relay(self, command: Command) -> None:
        """Propose `command` without waiting: here when this node leads the metadata group, else sent to
        its leader (dropped while none is known)."""
        leader = self._host.leader_of(self._group)
        if leader == self._host.node:
            self._fire(command)
        elif leader is not None:
            self._host.send_control(leader, self._relayed(command, leader))

    async def relay_until(self, command: Command, done: Callable[[], bool]) -> bool:
        """Relay `command` (again every RELAY_EVERY_S) until `done()` holds in this node's metadata;
        False when METADATA_WAIT_S pass first."""
        deadline = time.monotonic() + METADATA_WAIT_S
        next_send = 0.0
        while not done():
            now = time.monotonic()
            if now > deadline:
                return False
            if now >= next_send:
                self.relay(command)
                next_send = now + RELAY_EVERY_S
            await asyncio.sleep(0.02)
        return True

    def _relayed(self, command: Command, leader: str) -> dict[str, Any]:
        """The control frame relaying `command` to `leader`: the codec's form, or the key of versions
        before it for a leader that has not said it reads the codec."""
        if self._codec.reads(leader) < CODEC_VERSION:
            tag, *values = encode(command, 0)
            older = next((key for key, kind in OLDER_RELAY_KEYS.items() if kind == tag), None)
            if older is not None:
                return {older: values}
        return {RELAY_KEY: encode(command)}

    def _fire(self, command: Command) -> None:
        with contextlib.suppress(ProposalFailed):
            future = self._host.submit(self._group, encode(command, self.log_version()))
            future.add_done_callback(_ignore_outcome)

    # -- control frames ----------------------------------------------------------------------------

    def announce(self, peers: Iterable[str]) -> None:
        """Tell `peers` which codec version this node reads."""
        for peer in peers:
            self._host.send_control(peer, self._codec.announcement())

    def on_control(self, peer: str, control: dict[str, Any]) -> None:
        """A peer's control frame: note the codec version it reads; on the metadata leader, propose the
        commands it relays (in any form a version sent them)."""
        self._codec.on_control(peer, control)
        if self._host.leader_of(self._group) != self._host.node:
            return
        for command in _relayed_commands(peer, control):
            self._fire(command)


def _relayed_commands(peer: str, control: dict[str, Any]) -> list[Command]:
    """The commands a control frame relays; malformed ones are logged and dropped."""
    encoded = [control[RELAY_KEY]] if RELAY_KEY in control else []
    for key, tag in OLDER_RELAY_KEYS.items():
        values = control.get(key)
        if values is not None:
            encoded.append([tag, *values] if isinstance(values, list) else values)
    commands = []
    for value in encoded:
        try:
            commands.append(decode(value))
        except MetadataDecodeError as exc:
            log.warning("dropping a malformed metadata relay from %s: %s", peer, exc)
    return commands


def _ignore_outcome(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
