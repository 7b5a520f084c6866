"""What a simulated client sees when the node it asks is not there to answer."""

from __future__ import annotations


class NodeDown(ConnectionError):
    """The node a request went to died before answering (the client sees a closed connection)."""


class NodeUnreachable(ConnectionError):
    """The node a request was for is down: nothing was sent (the client's connection was refused)."""
