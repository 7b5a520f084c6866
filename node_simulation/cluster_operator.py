"""The operator of the whole-node simulation: membership, leaders, queues, policies and metadata.

It removes a queue's replica from a node and adds one (the same node, often: shrink then grow), moves a
queue's leader, declares, publishes to, purges and deletes scratch queues, sets and clears a policy, and
writes metadata between such changes (user records) so that replaying what lies between takes more than
one round.
"""

from __future__ import annotations

import contextlib

from cluster.errors import NodeError
from cluster.membership.group_changes import MembershipRefused
from cluster.node import Node
from cluster.queues.policies import checked_policy, policy_version
from cluster.queues.queue_door import QueueDoor
from cluster.replication.stored_message import StoredMessage
from metadata_state.codec import OPERATOR_POLICY_CODEC_VERSION, POLICY_CODEC_VERSION
from node_simulation.exchange_requests import bind
from node_simulation.requests import ClientRequests, GaveUp
from node_simulation.workload import FANOUT, QUEUE_ARGUMENTS, ClientStats

OPERATOR_CAP = 500
"""The operator policy's `max-unacked`: over the policy's cap of 100 or 1000, the smallest wins."""
SCRATCH = tuple(f"scratch-{i}" for i in range(3))  # declared and deleted again and again
POLICY = "simulation"
FILLER_BYTES = 256 * 1024  # one metadata entry of filler (a user record): the metadata grows between changes
FILLER_BURST = 10  # records written at a time: 2.5 MiB, more than the 2 MiB a round applies


class Operator:
    """One operator, making requests through `requests` and counting in `stats`."""

    def __init__(self, requests: ClientRequests, stats: ClientStats) -> None:
        self.requests = requests
        self.stats = stats

    async def run(self) -> None:
        """Act now and then until the clients stop making requests."""
        await self.requests.declared.wait()
        while self.requests.active:
            await self.requests.pause(1.5)
            queue = self.requests.rng.choice(sorted(QUEUE_ARGUMENTS))
            action = self.requests.rng.choices(
                ["members", "transfer", "filler", "scratch", "policy"], [3, 1, 4, 2, 1]
            )[0]
            try:
                if action == "members":
                    await self._change_members(queue)
                elif action == "transfer":
                    await self._move_leader(queue)
                elif action == "scratch":
                    await self._scratch(self.requests.rng.choice(SCRATCH))
                elif action == "policy":
                    await self._change_policy()
                else:
                    await self._fill_metadata()
            except (NodeError, MembershipRefused, ConnectionError, GaveUp):
                continue

    async def _change_members(self, queue: str) -> None:
        node = self.requests.node_for(queue)
        current = await self._members(node, queue)
        outside = sorted(set(self.requests.sim.nodes) - set(current))
        if len(current) > 2 and (not outside or self.requests.rng.random() < 0.5):
            gone = self.requests.rng.choice([m for m in current if m != node] or current)

            async def remove(node_: Node) -> list[str]:
                return await node_.membership.queues.delete(queue, gone)

            await self.requests.ask(node, remove)
            self.stats.members_removed += 1
        elif outside:
            added = self.requests.rng.choice(outside)

            async def add(node_: Node) -> list[str]:
                return await node_.membership.queues.add(queue, added)

            await self.requests.ask(node, add)
            self.stats.members_added += 1

    async def _members(self, node: str, queue: str) -> list[str]:
        """`queue`'s members as `node` knows them."""

        async def members(node_: Node) -> list[str]:
            return list(node_.directory.info(queue).members)

        return await self.requests.ask(node, members)

    async def _move_leader(self, queue: str) -> None:
        node = self.requests.node_for(queue)
        current = await self._members(node, queue)
        to = self.requests.rng.choice([m for m in current if m != node] or current)

        async def transfer(node_: Node) -> None:
            await node_.membership.queues.transfer_leader(queue, to)

        await self.requests.ask(node, transfer)
        self.stats.leaders_moved += 1

    async def _scratch(self, queue: str) -> None:
        """Declare a queue, bind it to exchange `fan`, publish to it, delete it: once deleted, no node may
        bring it back, nor keep a binding to it."""
        self.stats.deleted.discard(queue)

        async def declare(node: Node) -> str:
            return await node.directory.declare(queue, {"x-quorum-initial-group-size": 3}, None)

        async def publish(door: QueueDoor) -> None:
            await door.publish([(StoredMessage(b"scratch", {}, "utf8"), None)], None, None)

        async def purge(door: QueueDoor) -> int:
            return await door.purge()

        async def delete(node: Node) -> None:
            await node.directory.delete(queue)

        await self.requests.ask(self.requests.node_for(None), declare)
        with contextlib.suppress(NodeError, ConnectionError, GaveUp):
            await self.requests.ask(self.requests.node_for(None), bind(FANOUT, queue))
            await self.requests.at_door(self.requests.node_for(queue), queue, publish)
            await self.requests.at_door(self.requests.node_for(queue), queue, purge)
        await self.requests.ask(
            self.requests.node_for(None), delete
        )  # not found: a node whose metadata lags, perhaps
        self.stats.deleted.add(queue)

    async def _change_policy(self) -> None:
        """Set (or clear) a policy over the simulation's queues, and an operator policy capping what it
        hands out with it: each leader applies them through its log."""
        leader = self.requests.sim.meta_leader()
        if leader is None:
            return
        timeout = self.requests.rng.choice([None, 20_000, 40_000])
        cap = self.requests.rng.choice([None, 100, 1000])  # a backlog control: needs every node to read it

        async def change(node: Node) -> None:
            node.formats.require_metadata(POLICY_CODEC_VERSION, "no policies")  # as the handler does
            pattern = f"^({'|'.join(QUEUE_ARGUMENTS)})$"
            if timeout is None:
                await node.metadata_door.clear_policy(POLICY)
            else:
                definition = {"consumer-timeout": timeout} | ({} if cap is None else {"max-unacked": cap})
                policy = checked_policy(POLICY, pattern, definition, 0)
                node.formats.require_queue_ops(policy_version(policy), "not all of these policy keys")
                await node.metadata_door.set_policy(POLICY, pattern, definition, 0)
            # an operator cap over the policy's, as the operator-policy handler sets and clears it
            node.formats.require_metadata(OPERATOR_POLICY_CODEC_VERSION, "no operator policies")
            if cap is None:
                await node.metadata_door.clear_policy(POLICY, operator=True)
            else:
                ceiling = {"max-unacked": OPERATOR_CAP}
                node.formats.require_queue_ops(
                    policy_version(checked_policy(POLICY, pattern, ceiling, 0, True)), ""
                )
                await node.metadata_door.set_policy(POLICY, pattern, ceiling, 0, operator=True)

        with contextlib.suppress(ValueError):  # a node said it reads an older codec since the check: 409
            await self.requests.ask(leader.name, change)
            self.stats.policies_changed += 1

    async def _fill_metadata(self) -> None:
        """A burst of user records, together more than one apply round of the metadata."""
        for _ in range(FILLER_BURST):
            leader = self.requests.sim.meta_leader()
            if leader is None:
                return
            user = f"filler-{self.requests.rng.randrange(50)}"
            secret = f"{self.requests.rng.getrandbits(64):x}".ljust(FILLER_BYTES, "x")

            async def put(node: Node, user: str = user, secret: str = secret) -> None:
                await node.metadata_door.put_user(user, secret, [])

            await self.requests.ask(leader.name, put)
            self.stats.filler_bytes += FILLER_BYTES
