"""Prometheus metrics of one node: rates counted by the handlers, depths and Raft state at scrape."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from api.message_rates import MessageRates
from cluster.node_status import NodeStatus
from cluster.queue_directory import QueueDirectory
from cluster.queue_results import MessageRow


class _NodeCollector(Collector):
    """Queue depths, Raft group state and the store check's progress, read from the node when scraped."""

    def __init__(self, queues: QueueDirectory, status: NodeStatus) -> None:
        self.queues = queues
        self.status = status

    def collect(self) -> Iterator[GaugeMetricFamily]:
        depth = GaugeMetricFamily(
            "quorumq_queue_messages", "Messages in a queue by state", labels=["queue", "state"]
        )
        consumers = GaugeMetricFamily("quorumq_queue_consumers", "Consumers of a queue", labels=["queue"])
        for queue in self.queues.leading():
            stats = queue.stats()
            depth.add_metric([queue.name, "ready"], stats.messages_ready)
            depth.add_metric([queue.name, "unacked"], stats.messages_unacknowledged)
            depth.add_metric([queue.name, "dlx"], stats.messages_dlx)
            depth.add_metric([queue.name, "delayed"], stats.messages_delayed)
            consumers.add_metric([queue.name], stats.consumers)
        yield depth
        yield consumers
        groups = self.status.groups()
        led = GaugeMetricFamily("quorumq_raft_groups_led", "Raft groups this node leads")
        led.add_metric([], groups.led)
        yield led
        hosted = GaugeMetricFamily("quorumq_raft_groups", "Raft groups hosted on this node")
        hosted.add_metric([], groups.hosted)
        yield hosted
        changes = GaugeMetricFamily("quorumq_raft_leader_changes", "Leadership changes seen on this node")
        changes.add_metric([], self.status.leader_changes)
        yield changes
        checked = GaugeMetricFamily(
            "quorumq_store_checked_bytes", "Bytes the read of the whole database after start has verified"
        )
        checked.add_metric([], self.status.store_check.checked_bytes)
        yield checked
        check_done = GaugeMetricFamily("quorumq_store_check_done", "1 once the database was read through")
        check_done.add_metric([], int(self.status.store_check.done))
        yield check_done


class Metrics:
    """The registry served at /metrics, the counters handlers update (through `count_*`, which also
    count the management API's message rates) and those rates."""

    def __init__(self, queues: QueueDirectory, status: NodeStatus) -> None:
        self.rates = MessageRates()
        self.registry = CollectorRegistry()
        self.published = Counter("quorumq_published", "Messages confirmed", ["queue"], registry=self.registry)
        self.delivered = Counter("quorumq_delivered", "Messages delivered", ["queue"], registry=self.registry)
        self.settled = Counter(
            "quorumq_settled", "Messages acked or nacked", ["queue", "outcome"], registry=self.registry
        )
        self.forwarded = Counter(
            "quorumq_forwarded",
            "Requests passed on to the node that serves them, by path (the peer transport, or HTTP)",
            ["via"],
            registry=self.registry,
        )
        self.stream_operations = Counter(
            "quorumq_stream_operations",
            "Operations received on streaming connections (GET /api/stream), by op",
            ["op"],
            registry=self.registry,
        )
        self.confirm_seconds = Histogram(
            "quorumq_publish_confirm_seconds",
            "Time from a publish request to its majority confirm (Raft commit + apply)",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
            registry=self.registry,
        )
        self.registry.register(_NodeCollector(queues, status))

    def count_published(self, queue: str, amount: int) -> None:
        """Messages of `queue` confirmed here."""
        self.published.labels(queue).inc(amount)
        self.rates.count(queue, "publish", amount)

    def count_delivered(self, queue: str, rows: Sequence[MessageRow]) -> None:
        """Messages of `queue` handed out here (to a consumer or a get), redeliveries among them."""
        self.delivered.labels(queue).inc(len(rows))
        self.rates.count(queue, "deliver_get", len(rows))
        self.rates.count(queue, "redeliver", sum(1 for row in rows if row.redelivered))

    def count_settled(self, queue: str, kind: str, amount: int) -> None:
        """Messages of `queue` acked (`kind` "ack") or nacked ("nack") here."""
        self.settled.labels(queue, kind).inc(amount)
        if kind == "ack":
            self.rates.count(queue, "ack", amount)
