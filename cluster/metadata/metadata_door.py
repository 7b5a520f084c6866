"""The node's one door for metadata proposals: typed proposals on the metadata leader, and relays to it
from any node.

A relay travels to the metadata leader as a control frame, which the leader proposes:
`{"metadata": <encoded command>}`. Versions before the codec sent one key per command (`register`,
`set_arguments`, `expire`, `set_members`: the command's version-0 values without its tag). During a
rolling upgrade the leader still accepts those keys from older nodes, and a node sends them to a leader
that has not said it reads the codec (an older leader ignores the new key).

Which codec version the door writes, and what the leader said it reads, come from the node's
`FormatVersions` (`cluster/replication/format_versions.py`): version 1 only once every other node of the
cluster said it reads it, version 0 before, as an older node refuses a command it cannot decode.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Protocol

from cluster.replication.proposals import ProposalFailed, not_committed
from metadata_state.codec import CODEC_VERSION, MetadataDecodeError, decode, encode
from metadata_state.commands import (
    Bind,
    BootstrapUsers,
    ClearPermissions,
    ClearPolicy,
    Command,
    Declare,
    DeclareExchange,
    DeclareVhost,
    Delete,
    DeleteExchange,
    DeleteUser,
    DeleteVhost,
    ForgetNode,
    PutUser,
    RegisterNode,
    SetMembers,
    SetPermissions,
    SetPolicy,
    Unbind,
)
from metadata_state.records import BindingRecord
from metadata_state.replies import Reply
from metadata_state.vhost_names import DEFAULT_VHOST

log = logging.getLogger(__name__)

RELAY_KEY = "metadata"
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


class MetadataFormat(Protocol):
    """Which metadata codec version this node writes and its peers read (`FormatVersions`)."""

    def writes_metadata(self) -> int: ...

    def metadata_read_by(self, peer: str) -> int: ...


class MetadataDoor:
    """Proposes metadata commands for one node, in the codec version `formats` says it writes."""

    def __init__(self, host: ProposingHost, group: str, formats: MetadataFormat) -> None:
        self._host = host
        self._group = group
        self._formats = formats

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

    async def set_permissions(
        self, user: str, configure: str, write: str, read: str, vhost: str = DEFAULT_VHOST
    ) -> Reply:
        """Set a user's permission patterns in `vhost`."""
        return await self._submit(SetPermissions(user, configure, write, read, vhost))

    async def set_policy(
        self,
        policy: str,
        pattern: str,
        definition: dict[str, Any],
        priority: int,
        operator: bool = False,
        vhost: str = DEFAULT_VHOST,
    ) -> Reply:
        """Create or replace a policy of `vhost`, or with `operator` an operator policy (checked by the
        caller)."""
        return await self._submit(SetPolicy(policy, pattern, definition, priority, operator, vhost))

    async def clear_policy(self, policy: str, operator: bool = False, vhost: str = DEFAULT_VHOST) -> Reply:
        """Remove a policy of `vhost`, or with `operator` an operator policy."""
        return await self._submit(ClearPolicy(policy, operator, vhost))

    # The vhosts' commands, and the commands above naming a vhost other than DEFAULT_VHOST, are of
    # metadata codec VHOST_CODEC_VERSION: the caller requires every node to read it.

    async def declare_vhost(self, vhost: str, description: str, tags: list[str]) -> Reply:
        """Create a vhost, or update its description and tags."""
        return await self._submit(DeclareVhost(vhost, description, tuple(tags)))

    async def delete_vhost(self, vhost: str) -> Reply:
        """Delete a vhost that holds no queue, with everything else of it."""
        return await self._submit(DeleteVhost(vhost))

    async def clear_permissions(self, user: str, vhost: str) -> Reply:
        """Take a user's permissions in `vhost` away."""
        return await self._submit(ClearPermissions(user, vhost))

    # The exchanges' and bindings' commands are of metadata codec EXCHANGE_CODEC_VERSION: the caller
    # requires every node to read it (`FormatVersions.require_metadata`); in an older one, ValueError.

    async def declare_exchange(
        self,
        vhost: str,
        exchange: str,
        type: str,
        durable: bool,
        auto_delete: bool,
        internal: bool,
        arguments: dict[str, Any],
    ) -> Reply:
        """Declare an exchange (checked by the caller)."""
        return await self._submit(
            DeclareExchange(vhost, exchange, type, durable, auto_delete, internal, arguments)
        )

    async def delete_exchange(self, vhost: str, exchange: str, if_unused: bool) -> Reply:
        """Delete an exchange and the bindings from and to it (with `if_unused`, only while it is the
        source of none)."""
        return await self._submit(DeleteExchange(vhost, exchange, if_unused))

    async def bind(self, binding: BindingRecord) -> Reply:
        """Add `binding`."""
        return await self._submit(Bind(*_binding_fields(binding)))

    async def unbind(self, binding: BindingRecord) -> Reply:
        """Remove `binding`."""
        return await self._submit(Unbind(*_binding_fields(binding)))

    async def _submit(self, command: Command) -> Reply:
        try:
            reply: Reply = await self._host.submit(self._group, self._encoded(command))
        except ProposalFailed as exc:
            raise not_committed(exc) from exc
        return reply

    def _encoded(self, command: Command) -> list[Any]:
        return encode(command, self._formats.writes_metadata())

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
        deadline = asyncio.get_running_loop().time() + METADATA_WAIT_S
        next_send = 0.0
        while not done():
            now = asyncio.get_running_loop().time()
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
        version = min(CODEC_VERSION, self._formats.metadata_read_by(leader))
        if version == 0:
            tag, *values = encode(command, 0)
            older = next((key for key, kind in OLDER_RELAY_KEYS.items() if kind == tag), None)
            if older is not None:
                return {older: values}
        return {RELAY_KEY: encode(command, max(version, 1))}

    def _fire(self, command: Command) -> None:
        with contextlib.suppress(ProposalFailed):
            future = self._host.submit(self._group, self._encoded(command))
            future.add_done_callback(_ignore_outcome)

    # -- control frames ----------------------------------------------------------------------------

    def on_control(self, peer: str, control: dict[str, Any]) -> None:
        """A peer's control frame: on the metadata leader, propose the commands it relays (in any form a
        version sent them)."""
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


def _binding_fields(binding: BindingRecord) -> tuple[str, str, str, str, str, dict[str, Any]]:
    """The fields of a `Bind` or `Unbind` of `binding`."""
    return (
        binding.vhost,
        binding.source,
        binding.destination,
        binding.destination_type,
        binding.routing_key,
        binding.arguments,
    )
