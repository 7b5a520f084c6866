"""Nodes joining and being forgotten in the whole-node simulation: the cluster's own membership churn.

A spare node, none of the seeds, joins through a member's URL (`SimJoinRequester`) on an empty data
directory. Later, while losing it for good leaves every group a majority
(`NodeSimulation.loss_survivable`), it is stopped and the operator forgets it on the metadata leader,
retrying until the leader agrees (it refuses while it still sees the node up, and may not know it yet
while its join is on its way), at most `FORGET_ATTEMPTS` times. Once that is over the spare may join
again, as a new incarnation under the same name; a replica it left in a queue group stays a member
(the default `membership_auto_remove` is off) until an operator or a leader's upkeep removes it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import shutil
from typing import TYPE_CHECKING

from cluster.errors import NodeError, NodeNotFound
from cluster.membership.group_changes import MembershipRefused
from cluster.node import Node
from raft_log.testing.simulated_database import SimulatedDatabase

if TYPE_CHECKING:
    from node_simulation.simulation import NodeSimulation, SimNode

FORGET_TIMEOUT_S = 10.0  # the operator's tool gives up on an answer after this
FORGET_RETRY_S = 0.5
FORGET_ATTEMPTS = 40


class NodeChurn:
    """Joins and forgets of `spare` in `sim`, choices drawn from `rng`."""

    def __init__(self, sim: NodeSimulation, spare: SimNode, rng: random.Random) -> None:
        self._sim = sim
        self.spare = spare
        self._rng = rng
        self._forgetting: asyncio.Task[None] | None = None

    def join(self) -> None:
        """Start the spare on an empty data directory, joining through a member, unless it is a member
        or its forgetting is still under way."""
        sim, spare = self._sim, self.spare
        if spare.name in sim.nodes or (self._forgetting is not None and not self._forgetting.done()):
            return
        through = sim.nodes[self._rng.choice(sorted(sim.nodes))].config.http_url
        spare.config = dataclasses.replace(spare.config, join=through)
        spare.db = SimulatedDatabase()
        spare.incarnation += 1
        shutil.rmtree(spare.config.data_dir, ignore_errors=True)
        spare.config.data_dir.mkdir(parents=True)
        sim.lost.discard(spare.name)
        sim.nodes[spare.name] = spare
        sim.stats.joins += 1
        sim.start(spare)

    def forget(self) -> None:
        """Stop the spare for good and have the operator forget it, if the cluster keeps every promise
        without what it holds."""
        sim, spare = self._sim, self.spare
        if spare.name not in sim.nodes or not sim.loss_survivable(spare.name):
            return
        sim.kill(spare)
        del sim.nodes[spare.name]
        sim.lost.add(spare.name)
        self._forgetting = sim.loop.create_task(self._forget(spare.name))

    async def _forget(self, name: str) -> None:
        """Ask the metadata leader to forget node `name` until it has (or the operator gives up)."""

        async def forget(node: Node) -> None:
            await node.membership.cluster.forget(name)

        for _ in range(FORGET_ATTEMPTS):
            leader = self._sim.meta_leader()
            if leader is not None:
                try:
                    await asyncio.wait_for(self._sim.request(leader.name, forget), FORGET_TIMEOUT_S)
                except NodeNotFound:
                    pass  # forgotten by an attempt whose answer was lost, or its join is still on its way
                except (NodeError, MembershipRefused, ConnectionError, TimeoutError):
                    pass
                else:
                    self._sim.stats.forgets += 1
                    return
            await asyncio.sleep(FORGET_RETRY_S)
