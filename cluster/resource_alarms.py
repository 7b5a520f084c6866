"""Resource alarms, as RabbitMQ raises them: a node whose free disk falls below its `disk_free_limit`,
or whose resident memory rises above its `vm_memory_high_watermark`, is in alarm. A publish to a queue
with a replica on a node in alarm is refused (`ResourceAlarmed`), while consumers, acks, purges and
deletes go on: draining is what frees the space. Unlike RabbitMQ, which blocks every publisher of the
cluster, only the queues that would write to the node in alarm are held back.

Each node reads its own usage every second and tells its peers its alarms in the control frame it sends
them then (`ALARMS_KEY`); a peer whose link is lost, or that never said, is taken to be in none. An
alarm clears only once the resource is back past its limit by a margin (`clearing_margin`), so that a
node hovering at its limit does not flap.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cluster.config import ResourceLimit
from cluster.errors import ResourceAlarmed
from cluster.resource_usage import ResourceUsage

log = logging.getLogger(__name__)

DISK = "disk"
MEMORY = "memory"
ALARMS_KEY = "alarms"
MARGIN_FLOOR = 16 * 1024 * 1024


def clearing_margin(limit: int) -> int:
    """How far past `limit` a resource must be back for its alarm to clear: a tenth of the limit, at
    least 16 MiB, at most half the limit."""
    return min(max(limit // 10, MARGIN_FLOOR), limit // 2)


class ResourceAlarms:
    """This node's alarms (`raised`), from readings of `read_usage` against its limits, and those its
    peers announced."""

    def __init__(
        self,
        name: str,
        read_usage: Callable[[], ResourceUsage],
        disk_free_limit: ResourceLimit,
        vm_memory_high_watermark: ResourceLimit,
    ) -> None:
        self.name = name
        self._read_usage = read_usage
        self._disk_free_limit = disk_free_limit
        self._vm_memory_high_watermark = vm_memory_high_watermark
        self.usage: ResourceUsage | None = None
        self.raised: frozenset[str] = frozenset()
        self._peers: dict[str, frozenset[str]] = {}
        self._watchers: set[Callable[[], None]] = set()
        self._told: dict[str, list[str]] = {}

    def check(self) -> None:
        """Read this node's usage and raise or clear its alarms."""
        usage = self._read_usage()
        self.usage = usage
        disk_limit, memory_limit = self._limits(usage)
        raised = set(self.raised)
        if usage.disk_free < disk_limit:
            raised.add(DISK)
        elif usage.disk_free >= disk_limit + clearing_margin(disk_limit):
            raised.discard(DISK)
        if usage.memory_used > memory_limit:
            raised.add(MEMORY)
        elif usage.memory_used <= memory_limit - clearing_margin(memory_limit):
            raised.discard(MEMORY)
        for resource in sorted(raised - self.raised):
            log.warning("%s alarm raised: publishes to queues with a replica here are held back", resource)
        for resource in sorted(self.raised - raised):
            log.warning("%s alarm cleared", resource)
        self.raised = frozenset(raised)
        self._tell()

    def disk_refused_write(self, reason: str) -> None:
        """The disk refused a write: the disk alarm is raised whatever the last reading said."""
        if DISK not in self.raised:
            log.warning("disk alarm raised: a write failed (%s)", reason)
            self.raised |= {DISK}
            self._tell()

    def announcement(self) -> dict[str, list[str]]:
        """The control-frame field telling peers this node's alarms."""
        return {ALARMS_KEY: sorted(self.raised)}

    def on_control(self, peer: str, control: Mapping[str, Any]) -> None:
        """Take the alarms a peer announced (names this version does not know are kept as they are)."""
        announced = control.get(ALARMS_KEY)
        if isinstance(announced, list) and all(isinstance(a, str) for a in announced):
            self._peers[peer] = frozenset(announced)
            self._tell()

    def link_lost(self, peer: str) -> None:
        """Forget what a peer announced: it says again once linked."""
        self._peers.pop(peer, None)
        self._tell()

    def watch(self, watcher: Callable[[], None]) -> Callable[[], None]:
        """Call `watcher` each time the alarms known here change (`alarmed`); returns what stops it."""
        self._watchers.add(watcher)
        return lambda: self._watchers.discard(watcher)

    def _tell(self) -> None:
        alarmed = self.alarmed()
        if alarmed == self._told:
            return
        self._told = alarmed
        for watcher in list(self._watchers):
            try:
                watcher()
            except Exception:
                log.exception("a resource alarm watcher failed")

    def of(self, node: str) -> frozenset[str]:
        """The alarms `node` is in, as this node knows them."""
        return self.raised if node == self.name else self._peers.get(node, frozenset())

    def alarmed(self) -> dict[str, list[str]]:
        """Every node known to be in an alarm, with its alarms."""
        nodes = {**self._peers, self.name: self.raised}
        return {node: sorted(alarms) for node, alarms in sorted(nodes.items()) if alarms}

    def check_publish(self, members: Iterable[str]) -> None:
        """Refuse (`ResourceAlarmed`) a publish to a queue with a replica on one of `members` in alarm."""
        for node in members:
            alarms = self.of(node)
            if alarms:
                raise ResourceAlarmed(node, min(alarms))

    def report(self) -> dict[str, Any]:
        """This node's readings, limits and alarms under RabbitMQ's `/api/nodes` names."""
        usage = self.usage or self._read_usage()
        disk_limit, memory_limit = self._limits(usage)
        return {
            "disk_free": usage.disk_free,
            "disk_free_limit": disk_limit,
            "disk_free_alarm": DISK in self.raised,
            "mem_used": usage.memory_used,
            "mem_limit": memory_limit,
            "mem_alarm": MEMORY in self.raised,
        }

    def _limits(self, usage: ResourceUsage) -> tuple[int, int]:
        """The free-disk limit and the memory watermark in bytes, for the memory `usage` says it may use."""
        total = usage.memory_total
        return self._disk_free_limit.bytes_of(total), self._vm_memory_high_watermark.bytes_of(total)
