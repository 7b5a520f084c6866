"""Jepsen's total-queue checker over multisets of values, plus the verdict it produces.

attempts  = values of every invoked enqueue        enqueues = values of ok enqueues
dequeues  = values of ok dequeues (the drain too)  ok        = dequeues ∩ attempts
unexpected = dequeued values never attempted        duplicated = values dequeued more than once
lost      = enqueues - dequeues                     recovered = ok - enqueues (outcome was unknown)

The history is valid iff nothing is lost and nothing unexpected was dequeued; duplicates (at-least-once
redelivery) and recovered values (a publish answered info that did land) are reported, not failures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from jepsen_tests.history import Op

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
    notes: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        """True iff no acknowledged value was lost and no value came from nowhere."""
        return not self.lost and not self.unexpected

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
            "lost": self.lost,
            "unexpected": self.unexpected,
            "duplicated": {str(v): n for v, n in self.duplicated.items()},
            "recovered": self.recovered,
            "notes": self.notes,
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
            ("unexpected", self.unexpected),
            ("duplicated", sorted(self.duplicated)),
            ("recovered", self.recovered),
        ):
            shown = values[:SHOWN_VALUES]
            more = f" … and {len(values) - SHOWN_VALUES} more" if len(values) > SHOWN_VALUES else ""
            lines.append(f"{name}: {len(values)} {shown}{more}")
        lines.extend(self.notes)
        return "\n".join(lines)


def check_total_queue(history: Iterable[Op]) -> TotalQueueVerdict:
    """Apply the total-queue model to a history (ops of every queue together; values are unique)."""
    attempts: Counter[int] = Counter()
    enqueues: Counter[int] = Counter()
    dequeues: Counter[int] = Counter()
    failed: set[int] = set()
    info_enqueues = 0
    for op in history:
        if op.value is None:
            continue
        if op.f == "enqueue":
            if op.type == "invoke":
                attempts[op.value] += 1
            elif op.type == "ok":
                enqueues[op.value] += 1
            elif op.type == "info":
                info_enqueues += 1
            else:
                failed.add(op.value)
        elif op.f == "dequeue" and op.type == "ok":
            dequeues[op.value] += 1
    ok = dequeues & attempts
    unexpected = Counter({v: n for v, n in dequeues.items() if v not in attempts})
    failed_but_dequeued = sorted(failed & set(dequeues))
    notes = [f"dequeued although their enqueue failed: {failed_but_dequeued}"] if failed_but_dequeued else []
    return TotalQueueVerdict(
        attempt_count=sum(attempts.values()),
        enqueue_count=sum(enqueues.values()),
        dequeue_count=sum(dequeues.values()),
        ok=sorted(ok),
        lost=sorted(enqueues - dequeues),
        unexpected=sorted(unexpected),
        duplicated={v: n for v, n in sorted(dequeues.items()) if n > 1},
        recovered=sorted(ok - enqueues),
        info_enqueues=info_enqueues,
        failed_enqueues=len(failed),
        notes=notes,
    )
