"""Joining a running cluster over its public HTTP API: `POST /api/nodes` to the member given by
`--join`, asserted as this node for that member (named by its health answer, on the same connection),
the `JoinRequester` the server gives its node."""

from __future__ import annotations

from typing import Any

import aiohttp

from cluster.membership.join import JoinNotYet, JoinRefused
from cluster.security.peer_auth import NodeCaller
from metadata_state.records import NodeInfo

JOIN_TIMEOUT_S = 10.0


class HttpJoinRequester:
    """Asks a member to add this node through `POST /api/nodes`."""

    def __init__(self, caller: NodeCaller) -> None:
        self.caller = caller

    async def request_join(self, through: str, me: NodeInfo) -> list[NodeInfo]:
        """Every node of the cluster once the member at `through` added `me`; JoinRefused when it refuses
        (400, or 409 other than a change in progress), JoinNotYet for anything else."""
        nodes_url = f"{through.rstrip('/')}/api/nodes"
        timeout = aiohttp.ClientTimeout(total=JOIN_TIMEOUT_S)
        me_listed = {"name": me.name, "http": me.http, "raft": me.raft}
        try:
            async with aiohttp.ClientSession(timeout=timeout) as session:
                to = await self.caller.name_at(session, through)
                data, headers = await self.caller.json_call("POST", nodes_url, me_listed, to=to)
                async with session.post(
                    nodes_url, data=data, headers=headers, ssl=self.caller.ssl or True
                ) as answer:
                    body: Any = await answer.json(content_type=None)
                if answer.status in (200, 201):
                    return [NodeInfo(n["name"], n["http"], n["raft"]) for n in body["nodes"]]
                retry_later = answer.status == 409 and body["error"] == "change_in_progress"
                if answer.status in (400, 409) and not retry_later:
                    raise JoinRefused(str(body))
                raise JoinNotYet(f"{answer.status} {body}")
        except (aiohttp.ClientError, TimeoutError, ValueError, KeyError, TypeError) as exc:
            raise JoinNotYet(str(exc)) from exc
