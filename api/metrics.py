"""Prometheus metrics of one node: counters the handlers update, queue depths and Raft state read at
scrape, the Raft host's histograms, and the process and platform collectors. Per-queue series carry
RabbitMQ's names (rabbitmq_prometheus's detailed quorum-queue metrics) where they mean the same.

A scrape shows a queue's series only to those who may see the queue (`queues_shown`)."""

from __future__ import annotations

import asyncio
import copy
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from api.access import Principal
from api.message_rates import MessageRates
from cluster.metadata.metadata_view import MetadataView
from cluster.node_status import GroupsSummary, GroupState, NodeStatus
from cluster.queues.queue_directory import QueueDirectory
from cluster.queues.queue_results import MessageRow, QueueCounts
from cluster.replication.raft_metrics import RaftMetrics
from cluster.resource_alarms import ResourceAlarms

_QUEUE = "rabbitmq_detailed_queue_"
_RAFT = "rabbitmq_detailed_raft_"
MONITORING = "monitoring"
"""The tag of a scrape credential (as RabbitMQ's): every queue's series, and no permission on any queue."""

QueueFilter = Callable[[str], bool]


def queues_shown(caller: Principal | None, metadata: MetadataView) -> QueueFilter | None:
    """Whose series a scrape by `caller` shows: every queue's (None) when metrics are public (no
    caller), to an administrator or a user tagged `monitoring`; else those of the queues `GET /api/queues`
    lists to it (any permission on the queue)."""
    if caller is None or caller.administrator:
        return None
    record = metadata.users.get(caller.name)
    return None if record is not None and MONITORING in record.tags else caller.lists


def _gauge(name: str, documentation: str, labels: list[str] | None = None) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=labels)


@dataclass(frozen=True)
class _NodeReading:
    """What a scrape reads of the node, on its loop (`read_node`): the queues it leads with their counts
    and waiting publishes, the Raft groups it hosts, the store check's progress, its resources."""

    queues: list[tuple[str, QueueCounts, int]]
    groups: list[GroupState]
    summary: GroupsSummary
    leader_changes: int
    store_checked_bytes: int
    store_check_done: bool
    resources: Mapping[str, Any]


def read_node(queues: QueueDirectory, status: NodeStatus, alarms: ResourceAlarms) -> _NodeReading:
    """Read the node's state for a scrape (plain values: the series are made from them elsewhere)."""
    return _NodeReading(
        [(door.name, door.stats(), door.publishes_waiting) for door in queues.leading_doors()],
        status.group_states(),
        status.groups(),
        status.leader_changes,
        status.store_check.checked_bytes,
        status.store_check.done,
        alarms.report(),
    )


class _NodeSeries(Collector):
    """The series of a `_NodeReading`: the queues the node leads (RabbitMQ's per-queue names, as
    rabbitmq_prometheus's detailed metrics give them), the Raft groups it hosts, the store check's
    progress, and its resources against its alarms' limits (rabbitmq_prometheus's names)."""

    def __init__(self, reading: _NodeReading) -> None:
        self.reading = reading

    def collect(self) -> Iterator[Metric]:
        yield from self._queues()
        yield from self._raft()
        checked = _gauge(
            "quorumq_store_checked_bytes", "Bytes the read of the whole database after start has verified"
        )
        checked.add_metric([], self.reading.store_checked_bytes)
        yield checked
        check_done = _gauge("quorumq_store_check_done", "1 once the database was read through")
        check_done.add_metric([], int(self.reading.store_check_done))
        yield check_done
        yield from self._resources()

    def _resources(self) -> Iterator[Metric]:
        report = self.reading.resources
        for name, about, value in (
            (
                "quorumq_disk_space_available_bytes",
                "Free disk on the data directory's filesystem",
                "disk_free",
            ),
            (
                "quorumq_disk_space_available_limit_bytes",
                "The disk alarm's limit (disk_free_limit)",
                "disk_free_limit",
            ),
            ("quorumq_resident_memory_bytes", "The node's resident memory", "mem_used"),
            (
                "quorumq_resident_memory_limit_bytes",
                "The memory alarm's limit (vm_memory_high_watermark)",
                "mem_limit",
            ),
            (
                "quorumq_alarms_free_disk_space_watermark",
                "1 while the node is in a disk alarm",
                "disk_free_alarm",
            ),
            ("quorumq_alarms_memory_used_watermark", "1 while the node is in a memory alarm", "mem_alarm"),
        ):
            gauge = _gauge(name, about)
            gauge.add_metric([], int(report[value]))
            yield gauge

    def _queues(self) -> Iterator[Metric]:
        ready = _gauge(_QUEUE + "messages_ready", "Messages ready to be delivered", ["queue"])
        unacked = _gauge(_QUEUE + "messages_unacked", "Messages delivered and not yet settled", ["queue"])
        total = _gauge(
            _QUEUE + "messages", "Messages ready, unacked, delayed or dead letters waiting", ["queue"]
        )
        size = _gauge(_QUEUE + "messages_bytes", "Bytes of the queue's message bodies", ["queue"])
        consumers = _gauge(_QUEUE + "consumers", "Consumers of a queue", ["queue"])
        waiting = _gauge(
            "quorumq_queue_messages",
            "Messages of a queue neither ready nor unacked: delayed (waiting for their time) or dlx (dead"
            " letters waiting for their at-least-once move)",
            ["queue", "state"],
        )
        publishes_waiting = _gauge(
            "quorumq_queue_publishes_waiting",
            "Publishes waiting on a queue's leader for room in the full queue (their wait)",
            ["queue"],
        )
        dead_lettered = CounterMetricFamily(
            _QUEUE + "messages_dead_lettered",
            "Messages dead-lettered to a target queue, by reason (replicated: they survive a leader change)",
            labels=["queue", "reason"],
        )
        dropped = CounterMetricFamily(
            "quorumq_queue_messages_dropped",
            "Messages that left without being dead-lettered (no target, or discarded as they arrived)"
            ", by reason",
            labels=["queue", "reason"],
        )
        for name, stats, publishes in self.reading.queues:
            ready.add_metric([name], stats.messages_ready)
            unacked.add_metric([name], stats.messages_unacknowledged)
            total.add_metric([name], stats.messages)
            size.add_metric([name], stats.message_bytes)
            consumers.add_metric([name], stats.consumers)
            waiting.add_metric([name, "delayed"], stats.messages_delayed)
            waiting.add_metric([name, "dlx"], stats.messages_dlx)
            publishes_waiting.add_metric([name], publishes)
            for reason, count in sorted(stats.dead_lettered.items()):
                dead_lettered.add_metric([name, reason], count)
            for reason, count in sorted(stats.dropped.items()):
                dropped.add_metric([name, reason], count)
        yield from (
            ready,
            unacked,
            total,
            size,
            consumers,
            waiting,
            publishes_waiting,
            dead_lettered,
            dropped,
        )

    def _raft(self) -> Iterator[Metric]:
        labels = ["queue", "group"]
        term = CounterMetricFamily(_RAFT + "term", "The Raft term of this node's replica", labels=labels)
        last = _gauge(_RAFT + "log_last_written_index", "The last index of this replica's log", labels)
        commit = _gauge(_RAFT + "log_commit_index", "The commit index this replica knows", labels)
        applied = _gauge(_RAFT + "log_last_applied_index", "The last index this replica applied", labels)
        snapshot = _gauge(_RAFT + "log_snapshot_index", "The index of this replica's last snapshot", labels)
        log_bytes = _gauge(
            "quorumq_raft_log_applied_bytes",
            "Entry data this replica applied since its last snapshot (what a restart replays)",
            labels,
        )
        leader = _gauge("quorumq_raft_leader", "1 where this node leads the group", labels)
        for group in self.reading.groups:
            at = [group.queue, group.group]
            term.add_metric(at, group.term)
            last.add_metric(at, group.last_index)
            commit.add_metric(at, group.commit_index)
            applied.add_metric(at, group.applied_index)
            snapshot.add_metric(at, group.snapshot_index)
            log_bytes.add_metric(at, group.applied_bytes)
            leader.add_metric(at, int(group.role == "leader"))
        groups = self.reading.summary
        led = _gauge("quorumq_raft_groups_led", "Raft groups this node leads")
        led.add_metric([], groups.led)
        hosted = _gauge("quorumq_raft_groups", "Raft groups hosted on this node")
        hosted.add_metric([], groups.hosted)
        quiet = _gauge("quorumq_raft_groups_quiet", "Raft groups quiet on this node: idle, ticking no clock")
        quiet.add_metric([], groups.quiet)
        changes = CounterMetricFamily("quorumq_raft_leader_changes", "Leadership changes seen on this node")
        changes.add_metric([], self.reading.leader_changes)
        yield from (term, last, commit, applied, snapshot, log_bytes, leader, led, hosted, quiet, changes)


class _Read:
    """Series already read, as a scrape shows them: those labelled with a queue (a Raft group's too, which
    names its queue, or none for the metadata group) only for the queues `shown` (all with None)."""

    def __init__(self, families: list[Metric], shown: Set[str] | None) -> None:
        self._families = families
        self._shown = shown

    def collect(self) -> Iterator[Metric]:
        if self._shown is None:
            yield from self._families
            return
        for metric in self._families:
            shown = copy.copy(metric)
            shown.samples = [
                s for s in metric.samples if "queue" not in s.labels or s.labels["queue"] in self._shown
            ]
            yield shown


class Metrics:
    """The registry served at /metrics, the counters handlers update (through `count_*`, which also
    count the management API's message rates) and those rates."""

    def __init__(
        self, queues: QueueDirectory, status: NodeStatus, raft: RaftMetrics, alarms: ResourceAlarms
    ) -> None:
        self.rates = MessageRates()
        self.registry = CollectorRegistry()
        for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR, *raft.all()):
            self.registry.register(collector)
        self.published = Counter(
            _QUEUE + "messages_published", "Messages confirmed here", ["queue"], registry=self.registry
        )
        self.delivered = Counter(
            _QUEUE + "messages_delivered",
            "Messages handed out here (to consumers and gets)",
            ["queue"],
            registry=self.registry,
        )
        self.redelivered = Counter(
            _QUEUE + "messages_redelivered",
            "Messages handed out here that were handed out before",
            ["queue"],
            registry=self.registry,
        )
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
        self.overloaded = Counter(
            "quorumq_publishes_overloaded",
            "Publishes refused 503 overloaded here: the queue's leader held as many proposals not yet "
            "applied as it takes",
            ["queue"],
            registry=self.registry,
        )
        self.confirm_seconds = Histogram(
            "quorumq_publish_confirm_seconds",
            "Time from a publish request to its majority confirm (Raft commit + apply)",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
            registry=self.registry,
        )
        self._read_node = functools.partial(read_node, queues, status, alarms)

    async def exposition(self, shows: QueueFilter | None) -> bytes:
        """The Prometheus text of a scrape: every series, or with `shows` only those of the queues it
        shows (and those of no queue). The series are read on the loop (they read the node's state) and
        formatted in a thread: at 10,000 queues formatting takes about a second, a stall of the loop
        close to the time after which peers deem the node silent."""
        own, node = list(self.registry.collect()), self._read_node()
        shown = None
        if shows is not None:
            named = {name for name, _, _ in node.queues} | {group.queue for group in node.groups}
            named.update(s.labels["queue"] for metric in own for s in metric.samples if "queue" in s.labels)
            shown = {name for name in named if shows(name)}
        return await asyncio.to_thread(self._exposition, own, node, shown)

    @staticmethod
    def _exposition(own: list[Metric], node: _NodeReading, shown: Set[str] | None) -> bytes:
        return generate_latest(_Read([*own, *_NodeSeries(node).collect()], shown))

    def count_published(self, queue: str, amount: int) -> None:
        """Messages of `queue` confirmed here."""
        self.published.labels(queue).inc(amount)
        self.rates.count(queue, "publish", amount)

    def count_delivered(self, queue: str, rows: Sequence[MessageRow]) -> None:
        """Messages of `queue` handed out here (to a consumer or a get), redeliveries among them."""
        redelivered = sum(1 for row in rows if row.redelivered)
        self.delivered.labels(queue).inc(len(rows))
        self.redelivered.labels(queue).inc(redelivered)
        self.rates.count(queue, "deliver_get", len(rows))
        self.rates.count(queue, "redeliver", redelivered)

    def count_settled(self, queue: str, kind: str, amount: int) -> None:
        """Messages of `queue` acked (`kind` "ack") or nacked ("nack") here."""
        self.settled.labels(queue, kind).inc(amount)
        if kind == "ack":
            self.rates.count(queue, "ack", amount)
