"""What a node says in `connection.start` and `connection.tune`, and the limits a connection settles on.

The server properties name RabbitMQ's capabilities that clients look for before they use an extension
(confirms, `basic.nack`, consumer cancel notifications, `connection.blocked`, per-consumer prefetch,
authentication failures reported with `connection.close`). Tuning follows the spec: for the channel
and frame limits, 0 means "no limit" and the smaller non-zero value wins; a heartbeat of 0 from either
side turns heartbeats off, as RabbitMQ does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CHANNEL_MAX = 2047
FRAME_MAX = 131072
FRAME_MIN = 4096  # the spec's smallest frame_max a peer may ask for
HEARTBEAT_S = 60
MECHANISMS = "PLAIN AMQPLAIN"
LOCALES = "en_US"
CAPABILITIES = {
    "publisher_confirms": True,
    "basic.nack": True,
    "consumer_cancel_notify": True,
    "connection.blocked": True,
    "authentication_failure_close": True,
    "per_consumer_qos": True,
    "exchange_exchange_bindings": False,
}


def server_properties(version: str, node: str) -> dict[str, Any]:
    """The `server-properties` table of `connection.start`."""
    return {
        "product": "quorumq",
        "version": version,
        "platform": "Python",
        "cluster_name": node,
        "capabilities": dict(CAPABILITIES),
        "information": "Raft-replicated quorum queues",
    }


@dataclass(frozen=True, slots=True)
class Tuning:
    """The limits a connection runs with: channels (1..channel_max), the largest frame, and the
    heartbeat interval in seconds (0: none)."""

    channel_max: int
    frame_max: int
    heartbeat_s: int


def _smaller_limit(ours: int, theirs: int) -> int:
    """The smaller of two limits where 0 means none."""
    if ours == 0 or theirs == 0:
        return ours or theirs
    return min(ours, theirs)


def settle_tuning(server: Tuning, channel_max: int, frame_max: int, heartbeat_s: int) -> Tuning:
    """The tuning a connection runs with once the client answered `tune` with `tune-ok`'s values.
    ValueError when the client asks for more than the server offered or for a frame below FRAME_MIN."""
    if server.channel_max and (channel_max == 0 or channel_max > server.channel_max):
        raise ValueError(f"channel_max {channel_max} is beyond the {server.channel_max} offered")
    if server.frame_max and (frame_max == 0 or frame_max > server.frame_max):
        raise ValueError(f"frame_max {frame_max} is beyond the {server.frame_max} offered")
    if frame_max and frame_max < FRAME_MIN:
        raise ValueError(f"frame_max {frame_max} is below the least allowed, {FRAME_MIN}")
    return Tuning(
        _smaller_limit(server.channel_max, channel_max),
        _smaller_limit(server.frame_max, frame_max),
        0 if heartbeat_s == 0 or server.heartbeat_s == 0 else heartbeat_s,
    )
