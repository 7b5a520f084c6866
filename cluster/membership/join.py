"""How a node asks a running cluster to let it join (`--join URL`): the server layer provides the call
(`api.join_requester` over the public HTTP API); membership only retries it."""

from __future__ import annotations

from typing import Protocol

from metadata_state.records import NodeInfo


class JoinRefused(Exception):
    """The cluster refused the join for good (e.g. the name is taken by a node with other addresses)."""


class JoinNotYet(Exception):
    """The join did not happen now (no answer, no leader, another change in progress): try again."""


class JoinRequester(Protocol):
    """Asks a member of a running cluster to add a node."""

    async def request_join(self, through: str, me: NodeInfo) -> list[NodeInfo]:
        """Ask the member at URL `through` to register `me` and add it to the metadata group; every node
        of the cluster once done. JoinRefused or JoinNotYet otherwise."""
        ...
