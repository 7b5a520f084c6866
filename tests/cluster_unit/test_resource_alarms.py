"""Resource alarms: a node below its free-disk limit or above its memory watermark is in alarm until the
resource is back past the limit by a margin; peers learn its alarms from its control frames, and a
publish to a queue with a replica on a node in alarm is refused."""

from __future__ import annotations

import pytest

from cluster.config import ResourceLimit
from cluster.errors import ResourceAlarmed
from cluster.resource_alarms import ALARMS_KEY, DISK, MARGIN_FLOOR, MEMORY, ResourceAlarms, clearing_margin
from cluster.resource_usage import ResourceUsage

MIB = 1024 * 1024
DISK_LIMIT = 100 * MIB
MEMORY_LIMIT = 1000 * MIB


class Machine:
    """What the node reads of the machine: the readings a test sets."""

    def __init__(self) -> None:
        self.usage = ResourceUsage(
            disk_free=10 * DISK_LIMIT, memory_used=MEMORY_LIMIT // 2, memory_total=4000 * MIB
        )

    def read(self) -> ResourceUsage:
        return self.usage

    def set(self, *, disk_free: int | None = None, memory_used: int | None = None) -> None:
        current = self.usage
        self.usage = ResourceUsage(
            current.disk_free if disk_free is None else disk_free,
            current.memory_used if memory_used is None else memory_used,
            current.memory_total,
        )


def alarms_on(machine: Machine) -> ResourceAlarms:
    alarms = ResourceAlarms(
        "a", machine.read, ResourceLimit(absolute=DISK_LIMIT), ResourceLimit(relative=0.25)
    )
    alarms.check()
    return alarms


def test_the_margin_is_a_tenth_of_the_limit_at_least_16_mib_at_most_half() -> None:
    assert clearing_margin(1000 * MIB) == 100 * MIB
    assert clearing_margin(100 * MIB) == MARGIN_FLOOR
    assert clearing_margin(10 * MIB) == 5 * MIB


def test_the_disk_alarm_is_raised_below_the_limit_and_cleared_past_it_by_the_margin() -> None:
    machine = Machine()
    alarms = alarms_on(machine)
    assert alarms.raised == frozenset()
    machine.set(disk_free=DISK_LIMIT - 1)
    alarms.check()
    assert alarms.raised == {DISK}
    machine.set(disk_free=DISK_LIMIT + clearing_margin(DISK_LIMIT) - 1)
    alarms.check()
    assert alarms.raised == {DISK}, "back at the limit but within the margin: no flapping"
    machine.set(disk_free=DISK_LIMIT + clearing_margin(DISK_LIMIT))
    alarms.check()
    assert alarms.raised == frozenset()


def test_the_memory_alarm_is_raised_above_the_watermark_and_cleared_below_it_by_the_margin() -> None:
    machine = Machine()
    alarms = alarms_on(machine)
    machine.set(memory_used=MEMORY_LIMIT + 1)
    alarms.check()
    assert alarms.raised == {MEMORY}
    assert alarms.report()["mem_alarm"] and alarms.report()["mem_limit"] == MEMORY_LIMIT
    machine.set(memory_used=MEMORY_LIMIT - clearing_margin(MEMORY_LIMIT) + 1)
    alarms.check()
    assert alarms.raised == {MEMORY}
    machine.set(memory_used=MEMORY_LIMIT - clearing_margin(MEMORY_LIMIT))
    alarms.check()
    assert alarms.raised == frozenset() and not alarms.report()["mem_alarm"]


def test_peers_learn_a_nodes_alarms_from_its_control_frames_and_forget_them_with_the_link() -> None:
    machine = Machine()
    alarms = alarms_on(machine)
    machine.set(disk_free=0)
    alarms.check()
    assert alarms.announcement() == {ALARMS_KEY: [DISK]}
    peer = ResourceAlarms("b", Machine().read, ResourceLimit(absolute=1), ResourceLimit(relative=0.9))
    peer.check()
    peer.on_control("a", alarms.announcement())
    peer.on_control("c", {"other": 1})  # an older peer says nothing of alarms: none
    peer.on_control("d", {ALARMS_KEY: "disk"})  # malformed: ignored
    assert peer.of("a") == {DISK} and peer.of("c") == frozenset() and peer.of("d") == frozenset()
    assert peer.alarmed() == {"a": [DISK]}
    peer.link_lost("a")
    assert peer.alarmed() == {}


def test_a_publish_is_refused_when_a_member_of_its_queue_is_in_alarm() -> None:
    machine = Machine()
    alarms = alarms_on(machine)
    alarms.on_control("b", {ALARMS_KEY: [MEMORY]})
    alarms.check_publish(["a", "c"])
    with pytest.raises(ResourceAlarmed) as refused:
        alarms.check_publish(["a", "b", "c"])
    assert (refused.value.node, refused.value.resource, refused.value.code) == ("b", MEMORY, "resource_alarm")
    machine.set(disk_free=0)
    alarms.check()
    with pytest.raises(ResourceAlarmed, match="node a is in a disk alarm"):
        alarms.check_publish(["a"])
