"""The disk alarm's rule over a history: a publish held back by a disk alarm, and by nothing else, may be
refused only as the alarm refuses.

A disk nemesis fault that leaves room in the alarm's range (`disk_nemesis.holds_back`) makes publishes
to the victims' queues wait, and then fail with `resource_alarm`, or with `timeout` when a retry was
still on the wire at the client's deadline (its outcome is unknown: it may have landed once the alarm
cleared). Any other error of a publish whose whole span, from invoke to completion, overlapped only
such faults is the cluster failing otherwise: a node stopped, a leader lost, a write refused. A publish
that also overlapped another fault, or a disk filled to the last byte (a node restarts then), is not
judged by this rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from jepsen_tests.disk_nemesis import holds_back
from jepsen_tests.history import Op
from jepsen_tests.nemesis_log import FaultSpan

ALARM_REFUSALS = frozenset({"resource_alarm", "timeout"})


def refused_otherwise(ops: Iterable[Op], faults: Sequence[FaultSpan]) -> dict[int, str]:
    """Value → error of each publish that failed (or ended unknown) with an error the disk alarm does not
    give, while only disk faults that hold publishers back were in force during its span."""
    invoked: dict[int, float] = {}
    found: dict[int, str] = {}
    for op in ops:
        if op.f != "enqueue" or op.value is None:
            continue
        if op.type == "invoke":
            invoked[op.value] = op.time
            continue
        began = invoked.get(op.value)
        if op.type == "ok" or began is None or op.error in ALARM_REFUSALS:
            continue
        overlapping = [f for f in faults if f.start < op.time and f.end > began]
        if overlapping and all(f.nemesis == "disk" and holds_back(f.kind) for f in overlapping):
            found[op.value] = op.error or op.type
    return found
