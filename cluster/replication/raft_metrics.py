"""What a node's Raft host measures as it works, for Prometheus: how long fsyncs take, how long an entry
takes from its proposal to being applied on the leader (RabbitMQ's `raft_entry_commit_latency`), and
how large the snapshots it takes are. The HTTP layer registers them with the node's other metrics."""

from __future__ import annotations

from prometheus_client import Histogram

_SECONDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)
_BYTES = tuple(float(4**power) for power in range(5, 16))  # 1 KiB to 1 GiB


class RaftMetrics:
    """The histograms, unregistered until the HTTP layer registers them (so each node has its own)."""

    def __init__(self) -> None:
        self.fsync_seconds = Histogram(
            "quorumq_fsync_seconds",
            "Time of each synced write of a group-commit round (the write and its fsync)",
            buckets=_SECONDS,
            registry=None,
        )
        self.commit_seconds = Histogram(
            "rabbitmq_raft_entry_commit_latency_seconds",
            "Time from an entry's proposal on its leader to its application there (committed by a majority)",
            buckets=_SECONDS,
            registry=None,
        )
        self.snapshot_bytes = Histogram(
            "quorumq_snapshot_bytes",
            "Size of each snapshot this node takes of a group's state",
            buckets=_BYTES,
            registry=None,
        )

    def all(self) -> tuple[Histogram, ...]:
        return (self.fsync_seconds, self.commit_seconds, self.snapshot_bytes)
