"""Read your own routing changes on any node: a node's answer to a declare, delete, bind or unbind of an
exchange names the routing revision after it (ROUTING_REVISION_HEADER); a publish to an exchange that
carries the highest one heard is routed only once the node it reaches applied that revision."""

from collections.abc import Mapping
from typing import Any

ROUTING_REVISION_HEADER = "X-Quorumq-Routing-Revision"
STREAM_FIELD = "routing_revision"


class RoutingRevision:
    """The highest routing revision a client heard (0: none), and how a publish to an exchange names it."""

    def __init__(self) -> None:
        self.highest = 0

    def heard(self, headers: Mapping[str, str]) -> None:
        """Note the revision an answer's `headers` name, if any (a malformed one is ignored)."""
        value = headers.get(ROUTING_REVISION_HEADER)
        if value is not None and value.isascii() and value.isdigit():
            self.highest = max(self.highest, int(value))

    def headers(self) -> dict[str, str]:
        """The header an HTTP publish to an exchange carries (none before any change was heard)."""
        return {ROUTING_REVISION_HEADER: str(self.highest)} if self.highest else {}

    def frame(self, frame: Mapping[str, Any]) -> Mapping[str, Any]:
        """`frame`, a stream publish to an exchange, with the revision to wait for."""
        return {**frame, STREAM_FIELD: self.highest} if self.highest else frame
