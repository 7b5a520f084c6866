"""Jepsen's total-queue checker over multisets of values, per queue, plus the verdict it produces.

attempts  = values of every invoked enqueue        enqueues = values of ok enqueues
dequeues  = values of ok dequeues (the drain too)  ok        = dequeues ∩ attempts
unexpected = dequeued values never attempted        lost      = enqueues - dequeues
duplicated = values one copy of which was dequeued more than once (a value published to one queue has
             one copy, one published through a fanout exchange a copy in each bound queue; a copy is
             dequeued from its queue or that queue's dead-letter queue)
recovered = ok - enqueues (outcome was unknown)
wrong_queue = values dequeued from a queue other than the ones they were published to (the queue, or
              the queues bound to the exchange) or their dead-letter queues
fanout_missing = values confirmed through a fanout exchange of which a bound queue's copy was never
              dequeued (jepsen_tests.fanout)
group_overlap, group_order = values of one group that came in one batch to one consumer, and values
            of a group that first came out of the grouped queue before a value of their group that was
            confirmed before they were published (jepsen_tests.message_groups)
protocol_errors = ok enqueues whose 2xx answer broke the API contract (e.g. fewer ids than messages)
refused_otherwise = publishes that failed, while only a disk alarm held them back, with an error the
            alarm does not give (jepsen_tests.disk_refusals)
enqueued_twice, resend_dequeued = a message id whose two values both came out, or whose resent value came
            out although the first was confirmed before (jepsen_tests.message_ids); a resend counts as
            an attempt, never as an enqueue
exercised = how many completed ops used each queue feature the workload draws and the server took
            (ok enqueues with a priority, through a fanout exchange or in a group, ok resends,
            requeueing nacks with a delay that were answered 2xx, ok dequeues whose touch before the ack
            was answered 2xx): the sets above cover them, and a run that used none did not test them

The history is valid iff nothing is lost (no value, no copy of a fanned one), nothing unexpected or
from the wrong queue was dequeued, no confirm broke the protocol, no publish was refused otherwise
during a disk alarm, no message id was enqueued twice, no group had two values out at once or one out
of order, and duplicates that no fault explains stay within their bound (jepsen_tests.duplicates);
recovered values (a publish answered info that did land) are reported.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from jepsen_tests.disk_refusals import refused_otherwise
from jepsen_tests.duplicates import Duplicates, classify_duplicates, completed_dequeues
from jepsen_tests.fanout import FANOUT, check_fanout, fanned_queues
from jepsen_tests.history import Op
from jepsen_tests.message_groups import GROUP, check_groups
from jepsen_tests.message_ids import check_message_ids
from jepsen_tests.nemesis_log import FaultSpan
from jepsen_tests.workload import dead_letter_queue

SHOWN_VALUES = 50


@dataclass(frozen=True)
class TotalQueueVerdict:
    """The checker's sets (as sorted value lists; duplicated maps value → times dequeued)."""

    attempt_count: int
    enqueue_count: int
    dequeue_count: int
    ok: list[int]
    lost: list[int]
    unexpected: list[int]
    duplicated: dict[int, int]
    recovered: list[int]
    info_enqueues: int = 0
    failed_enqueues: int = 0
    wrong_queue: dict[int, tuple[str, str]] = field(default_factory=dict)
    protocol_errors: list[int] = field(default_factory=list)
    refused_otherwise: dict[int, str] = field(default_factory=dict)
    duplicates: Duplicates = field(default_factory=lambda: Duplicates(0))
    enqueued_twice: dict[int, int] = field(default_factory=dict)
    resend_dequeued: dict[int, int] = field(default_factory=dict)
    fanout_missing: dict[int, list[str]] = field(default_factory=dict)
    group_overlap: dict[int, int] = field(default_factory=dict)
    group_order: dict[int, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    exercised: dict[str, int] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        """True iff nothing was lost (no copy of a fanned value either), invented, misrouted or confirmed
        against the protocol, no publish was refused otherwise during a disk alarm, no message id was
        enqueued twice, no group had two values out at once or one out of order, and the duplicates no
        fault explains are within their bound."""
        return (
            not self.lost
            and not self.fanout_missing
            and not self.unexpected
            and not self.wrong_queue
            and not self.protocol_errors
            and not self.refused_otherwise
            and not self.enqueued_twice
            and not self.resend_dequeued
            and not self.group_overlap
            and not self.group_order
            and self.duplicates.within_bound
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form, with the counts spelled out."""
        return {
            "valid": self.valid,
            "attempt_count": self.attempt_count,
            "enqueue_count": self.enqueue_count,
            "dequeue_count": self.dequeue_count,
            "info_enqueues": self.info_enqueues,
            "failed_enqueues": self.failed_enqueues,
            "ok_count": len(self.ok),
            "lost_count": len(self.lost),
            "unexpected_count": len(self.unexpected),
            "duplicated_count": len(self.duplicated),
            "recovered_count": len(self.recovered),
            "wrong_queue_count": len(self.wrong_queue),
            "protocol_error_count": len(self.protocol_errors),
            "refused_otherwise_count": len(self.refused_otherwise),
            "fanout_missing_count": len(self.fanout_missing),
            "group_overlap_count": len(self.group_overlap),
            "group_order_count": len(self.group_order),
            "lost": self.lost,
            "unexpected": self.unexpected,
            "duplicated": {str(v): n for v, n in self.duplicated.items()},
            "recovered": self.recovered,
            "wrong_queue": {str(v): list(queues) for v, queues in self.wrong_queue.items()},
            "protocol_errors": self.protocol_errors,
            "refused_otherwise": {str(v): error for v, error in self.refused_otherwise.items()},
            "enqueued_twice": {str(v): w for v, w in self.enqueued_twice.items()},
            "resend_dequeued": {str(v): w for v, w in self.resend_dequeued.items()},
            "fanout_missing": {str(v): queues for v, queues in self.fanout_missing.items()},
            "group_overlap": {str(v): w for v, w in self.group_overlap.items()},
            "group_order": {str(v): w for v, w in self.group_order.items()},
            "duplicates": self.duplicates.to_dict(),
            "notes": self.notes,
            "exercised": self.exercised,
        }

    def summary(self) -> str:
        """Counts and (up to SHOWN_VALUES of) the values of every set, as text."""
        lines = [
            f"valid: {self.valid}",
            f"attempts: {self.attempt_count}  enqueues ok: {self.enqueue_count}  "
            f"info: {self.info_enqueues}  fail: {self.failed_enqueues}  dequeues ok: {self.dequeue_count}",
            f"ok: {len(self.ok)}",
        ]
        for name, values in (
            ("lost", self.lost),
            ("copies missing from a fanout's queues", sorted(self.fanout_missing)),
            ("unexpected", self.unexpected),
            ("duplicated", sorted(self.duplicated)),
            ("recovered", self.recovered),
            ("wrong queue", sorted(self.wrong_queue)),
            ("protocol errors", self.protocol_errors),
            ("refused otherwise during a disk alarm", sorted(self.refused_otherwise)),
            ("message ids enqueued twice", sorted(self.enqueued_twice)),
            ("resends dequeued after a confirmed first", sorted(self.resend_dequeued)),
            ("values out with another of their group", sorted(self.group_overlap)),
            ("values out before one ahead of them in their group", sorted(self.group_order)),
        ):
            shown = values[:SHOWN_VALUES]
            more = f" … and {len(values) - SHOWN_VALUES} more" if len(values) > SHOWN_VALUES else ""
            lines.append(f"{name}: {len(values)} {shown}{more}")
        lines.append(self.duplicates.summary())
        if self.exercised:
            lines.append(
                "exercised: " + ", ".join(f"{name} {count}" for name, count in self.exercised.items())
            )
        lines.extend(self.notes)
        return "\n".join(lines)


def check_total_queue(history: Iterable[Op], faults: Sequence[FaultSpan] = ()) -> TotalQueueVerdict:
    """Apply the total-queue model to a history (ops of every queue together; values are unique);
    `faults` are the fault windows that may explain duplicates and that the disk alarm's rule reads."""
    ops = list(history)
    attempts: Counter[int] = Counter()
    enqueues: Counter[int] = Counter()
    dequeues: Counter[int] = Counter()
    routes: dict[str, tuple[str, ...]] = {}
    home: dict[int, tuple[str, tuple[str, ...]]] = {}
    wrong_queue: dict[int, tuple[str, str]] = {}
    failed: set[int] = set()
    protocol_errors: list[int] = []
    info_enqueues = 0
    exercised: Counter[str] = Counter()
    for op in ops:
        if op.value is None:
            continue
        for name in op.facts:
            feature = _EXERCISED.get((op.f, op.type, name))
            if feature is not None:
                exercised[feature] += 1
        if op.f in ("enqueue", "resend") and op.type == "invoke":
            attempts[op.value] += 1
            if op.queue is not None:
                fanned = fanned_queues(op)
                if fanned:
                    routes[op.queue] = fanned
                home[op.value] = (op.queue, routes.get(op.queue, (op.queue,)))
        elif op.f == "enqueue" and op.type == "ok":
            enqueues[op.value] += 1
            if op.error is not None:
                protocol_errors.append(op.value)
        elif op.f == "enqueue" and op.type == "info":
            info_enqueues += 1
        elif op.f == "enqueue" and op.type == "fail":
            failed.add(op.value)
        elif op.f == "dequeue" and op.type == "ok":
            dequeues[op.value] += 1
            went_in, queues = home.get(op.value, ("", ()))
            if queues and op.queue is not None and op.queue not in _may_come_out_of(queues):
                wrong_queue[op.value] = (went_in, op.queue)
    completed = completed_dequeues(ops)
    copies = Counter((dequeue.value, dequeue.copy) for dequeue in completed)
    ok = dequeues & attempts
    unexpected = Counter({v: n for v, n in dequeues.items() if v not in attempts})
    failed_but_dequeued = sorted(failed & set(dequeues))
    notes = [f"dequeued although their enqueue failed: {failed_but_dequeued}"] if failed_but_dequeued else []
    notes += [
        f"{v} went into {a} and came out of {b}" for v, (a, b) in list(wrong_queue.items())[:SHOWN_VALUES]
    ]
    fanout_missing = check_fanout(ops, copies)
    notes += [
        f"{v} was confirmed through a fanout exchange and never came out of {', '.join(queues)}"
        for v, queues in list(fanout_missing.items())[:SHOWN_VALUES]
    ]
    group_overlap, group_order = check_groups(ops)
    notes += [
        f"{v} came in one batch with {w} of its group" for v, w in list(group_overlap.items())[:SHOWN_VALUES]
    ]
    notes += [
        f"{v} came out of its group's queue before {w}, confirmed in its group before {v} was published"
        for v, w in list(group_order.items())[:SHOWN_VALUES]
    ]
    duplicated = {value for (value, _copy), n in copies.items() if n > 1}
    enqueued_twice, resend_dequeued = check_message_ids(ops, copies)
    return TotalQueueVerdict(
        attempt_count=sum(attempts.values()),
        enqueue_count=sum(enqueues.values()),
        dequeue_count=sum(dequeues.values()),
        ok=sorted(ok),
        lost=sorted(enqueues - dequeues),
        unexpected=sorted(unexpected),
        duplicated={v: dequeues[v] for v in sorted(duplicated)},
        recovered=sorted(ok - enqueues),
        info_enqueues=info_enqueues,
        failed_enqueues=len(failed),
        wrong_queue=dict(sorted(wrong_queue.items())),
        protocol_errors=sorted(protocol_errors),
        refused_otherwise=refused_otherwise(ops, faults),
        duplicates=classify_duplicates(completed, faults),
        enqueued_twice=enqueued_twice,
        resend_dequeued=resend_dequeued,
        fanout_missing=fanout_missing,
        group_overlap=group_overlap,
        group_order=group_order,
        notes=notes,
        exercised=dict(sorted(exercised.items())),
    )


def _may_come_out_of(queues: Iterable[str]) -> set[str]:
    """The queues a value published to `queues` may be dequeued from: those and their dead-letter queues."""
    return {out for queue in queues for out in (queue, dead_letter_queue(queue))}


_EXERCISED = {
    ("enqueue", "ok", "priority"): "published with a priority",
    ("enqueue", "ok", FANOUT): "published through a fanout exchange",
    ("enqueue", "ok", GROUP): "published in a group",
    ("resend", "ok", "first"): "resent under a message id",
    ("dequeue", "fail", "delay"): "nacked with a delay",
    ("dequeue", "ok", "touched"): "touched before the ack",
}
"""Which completed ops count as using a feature, by (f, type, the name of a fact of their detail)."""
