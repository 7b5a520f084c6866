"""A 3-node quorumq cluster of real `quorumq server` processes, shaped like RabbitCluster for the harness."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cli.node_processes import ProcessCluster


class QuorumqCluster:
    """Starts fresh node processes under `data_dir`, exposes their pids, stops and starts one, stops all."""

    def __init__(self, processes: ProcessCluster) -> None:
        self.processes = processes

    @classmethod
    def start(
        cls, data_dir: Path, count: int = 3, *, hosts: int = 1, prefix: Sequence[str] = ()
    ) -> QuorumqCluster:
        """Start `count` nodes with empty data dirs on `hosts` loopback hosts, each behind `prefix` and
        serving AMQP too, and wait until they are healthy."""
        return cls(ProcessCluster.start(data_dir, count, hosts=hosts, prefix=prefix, amqp=True))

    @property
    def urls(self) -> list[str]:
        """Every node's HTTP base URL."""
        return self.processes.urls

    @property
    def amqp_urls(self) -> list[str]:
        """Every node's AMQP URL (the Java client's way in)."""
        return self.processes.amqp_urls

    def pids(self) -> dict[str, int]:
        """Node name to process id, for the nodes that run."""
        return {node.name: node.process.pid for node in self.processes.nodes if node.process and node.running}

    def stop_node(self, index: int) -> None:
        """SIGTERM node `index` and wait until it has exited."""
        self.processes.nodes[index].stop()

    def start_node(self, index: int) -> None:
        """Start node `index` again on its data dir (without waiting for it to serve)."""
        self.processes.nodes[index].start()

    def stop(self) -> None:
        """Stop every node."""
        self.processes.stop()
