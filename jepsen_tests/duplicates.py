"""Why values were dequeued more than once: each redelivery's cause, the rates, and the bound.

Every `ok` dequeue of a copy of a value after its first is a duplicated dequeue (a value published through
a fanout exchange has a copy in each bound queue; a copy comes out of its queue or that queue's
dead-letter queue). It is put down to the `ok` dequeue of the same copy just before it (`earlier`:
delivered at its invoke, acked at its completion), first cause that applies:

- `ack-lost`: the earlier ack failed, or its consumer crashed mid-ack (the op carries an error), so the
  message stayed unsettled and came back;
- `fault`: a fault was in force while the earlier delivery was held (from the fault's start until
  FAULT_AFTERMATH_S after its heal: elections and catch-up follow a heal);
- `consumer-timeout`: the earlier delivery was held longer than the consumer timeout, so the server may
  have declared its consumer down and handed the message back before the ack arrived;
- `unexplained`: none of these.

rate = duplicated dequeues / dequeues. `ack-lost` and `fault` duplicates are at-least-once delivery
doing its job; the others happen with no fault to blame, and a run whose rate of those is above
NO_FAULT_BOUND fails.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from jepsen_tests.history import Op
from jepsen_tests.nemesis_log import FaultSpan
from jepsen_tests.workload import CONSUMER_TIMEOUT_MS, dead_letter_source

CAUSES = ("ack-lost", "fault", "consumer-timeout", "unexplained")
EXPLAINED_BY_FAULTS = frozenset({"ack-lost", "fault"})
FAULT_AFTERMATH_S = 2.0
NO_FAULT_BOUND = 0.005


@dataclass(frozen=True)
class Dequeue:
    """One completed `ok` dequeue: when it was delivered and acked, the ack's error if any, and the queue
    the copy it took was enqueued in."""

    value: int
    delivered: float
    acked: float
    error: str | None
    copy: str | None = None


@dataclass(frozen=True)
class Duplicates:
    """Duplicated dequeues by cause, out of `dequeues` ok dequeues; `values` lists each cause's values."""

    dequeues: int
    causes: dict[str, int] = field(default_factory=dict)
    values: dict[str, list[int]] = field(default_factory=dict)

    @property
    def count(self) -> int:
        """Duplicated dequeues (every ok dequeue of a value after its first)."""
        return sum(self.causes.values())

    @property
    def rate(self) -> float:
        """Duplicated dequeues / dequeues."""
        return self.count / self.dequeues if self.dequeues else 0.0

    @property
    def no_fault_rate(self) -> float:
        """Duplicated dequeues that neither a fault nor a failed ack explains, / dequeues."""
        unexplained = sum(n for cause, n in self.causes.items() if cause not in EXPLAINED_BY_FAULTS)
        return unexplained / self.dequeues if self.dequeues else 0.0

    @property
    def within_bound(self) -> bool:
        """True when the no-fault rate is at most NO_FAULT_BOUND."""
        return self.no_fault_rate <= NO_FAULT_BOUND

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "count": self.count,
            "rate": self.rate,
            "no_fault_rate": self.no_fault_rate,
            "no_fault_bound": NO_FAULT_BOUND,
            "causes": {cause: self.causes.get(cause, 0) for cause in CAUSES},
            "values": self.values,
        }

    def summary(self) -> str:
        """One line: count, rate, counts per cause."""
        causes = ", ".join(f"{cause} {self.causes.get(cause, 0)}" for cause in CAUSES)
        return (
            f"duplicated dequeues: {self.count} of {self.dequeues} ({self.rate:.3%}; {causes}); "
            f"no fault explains {self.no_fault_rate:.3%} (bound {NO_FAULT_BOUND:.1%})"
        )


def completed_dequeues(history: Iterable[Op]) -> list[Dequeue]:
    """Every ok dequeue with its delivery (invoke) time, in completion order."""
    delivered: dict[tuple[str, int], float] = {}
    done = []
    for op in history:
        if op.f != "dequeue" or op.value is None:
            continue
        key = (op.process, op.value)
        if op.type == "invoke":
            delivered[key] = op.time
        else:
            start = delivered.pop(key, op.time)
            if op.type == "ok":
                copy = None if op.queue is None else dead_letter_source(op.queue)
                done.append(Dequeue(op.value, start, op.time, op.error, copy))
    return done


def classify_duplicates(dequeues: Sequence[Dequeue], faults: Sequence[FaultSpan]) -> Duplicates:
    """The cause of every duplicated dequeue in `dequeues`, given the faults that were in force."""
    earlier: dict[tuple[int, str | None], Dequeue] = {}
    causes: dict[str, int] = {}
    values: dict[str, list[int]] = {}
    for dequeue in sorted(dequeues, key=lambda d: d.acked):
        before = earlier.get((dequeue.value, dequeue.copy))
        earlier[dequeue.value, dequeue.copy] = dequeue
        if before is None:
            continue
        cause = _cause(before, faults)
        causes[cause] = causes.get(cause, 0) + 1
        values.setdefault(cause, []).append(dequeue.value)
    return Duplicates(len(dequeues), causes, values)


def _cause(earlier: Dequeue, faults: Sequence[FaultSpan]) -> str:
    if earlier.error is not None:
        return "ack-lost"
    if any(f.start <= earlier.acked and earlier.delivered <= f.end + FAULT_AFTERMATH_S for f in faults):
        return "fault"
    if earlier.acked - earlier.delivered > CONSUMER_TIMEOUT_MS / 1000:
        return "consumer-timeout"
    return "unexplained"
