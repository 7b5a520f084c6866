"""Resends under a message id, checked against the queues' deduplication window (issue 41).

A publisher that gave a publish the message id of its value `first` then resends a new value under the
same id (an op `resend` whose detail is `first=<value>`). The work queues' window outlasts the run and
any clock fault, so:

- `enqueued_twice`: `first` and its resend were both dequeued from one queue (each value may come out
  several times, at-least-once; two values of one message id may not). Each queue deduplicates on its
  own, so a value published through a fanout exchange is judged copy by copy: when its first publish
  reached only some of the bound queues, the resend may land in the others;
- `resend_dequeued`: the resend's value was dequeued although `first` was confirmed (`ok`) before the
  resend was invoked: the queue held the id, so the resend must have been answered as a duplicate.

Either makes the history invalid. A resend whose first publish was not confirmed may land instead of it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from jepsen_tests.history import Op

FIRST = "first"


def resends(ops: Iterable[Op]) -> dict[int, tuple[int, float]]:
    """Each resent value with the value first published under its message id and when it was invoked."""
    found = {}
    for op in ops:
        first = op.facts.get(FIRST)
        if op.f == "resend" and op.type == "invoke" and op.value is not None and first:
            found[op.value] = (int(first), op.time)
    return found


def check_message_ids(
    ops: list[Op], dequeued: Iterable[tuple[int, str | None]]
) -> tuple[dict[int, int], dict[int, int]]:
    """`(enqueued_twice, resend_dequeued)`, each mapping a first value to its resend's (module docstring);
    `dequeued` names each value dequeued with the queue its copy was enqueued in."""
    out: defaultdict[int, set[str | None]] = defaultdict(set)
    for value, queue in dequeued:
        out[value].add(queue)
    confirmed_at = {op.value: op.time for op in ops if op.f == "enqueue" and op.type == "ok"}
    twice: dict[int, int] = {}
    resend_out: dict[int, int] = {}
    for resent, (first, invoked) in sorted(resends(ops).items()):
        if resent not in out:
            continue
        if out[resent] & out.get(first, set()):
            twice[first] = resent
        elif confirmed_at.get(first, invoked) < invoked:
            resend_out[first] = resent
    return twice, resend_out
