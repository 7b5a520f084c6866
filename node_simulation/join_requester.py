"""The `JoinRequester` of a simulated node: it asks the member at the URL it joins through, which runs
the join on the metadata leader (forwarding it there, as the route `POST /api/nodes` does), and reads
the answer as `HttpJoinRequester` reads the route's."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from api.join_requester import JOIN_TIMEOUT_S
from cluster.errors import BadRequest, NodeError
from cluster.membership.group_changes import MembershipRefused
from cluster.membership.join import JoinNotYet, JoinRefused
from cluster.node import Node
from metadata_state.records import NodeInfo

if TYPE_CHECKING:
    from node_simulation.simulation import NodeSimulation


class SimJoinRequester:
    """Asks a member of the simulated cluster to add a node."""

    def __init__(self, sim: NodeSimulation) -> None:
        self._sim = sim

    async def request_join(self, through: str, me: NodeInfo) -> list[NodeInfo]:
        async def join(node: Node) -> list[NodeInfo]:
            return await node.membership.cluster.join(me.name, me.http, me.raft)

        async def on_meta_leader(node: Node) -> list[NodeInfo]:
            leader = node.status.meta_leader()
            if leader is None or leader == node.name:
                return await join(node)
            return await self._sim.request(leader, join)

        try:
            asked = self._sim.request(self._sim.node_at(through), on_meta_leader)
            return await asyncio.wait_for(asked, JOIN_TIMEOUT_S)
        except MembershipRefused as exc:
            if exc.code == "change_in_progress":
                raise JoinNotYet(str(exc)) from exc
            raise JoinRefused(str(exc)) from exc
        except BadRequest as exc:
            raise JoinRefused(str(exc)) from exc
        except (NodeError, ConnectionError, TimeoutError) as exc:
            raise JoinNotYet(str(exc)) from exc
