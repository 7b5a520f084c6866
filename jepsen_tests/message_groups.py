"""Ordered message groups, checked for one message of a group out at a time and for per-group order
(issue 41).

A publisher may publish a value to the grouped queue (declared with `x-message-groups: true`) in one of a
few groups: an `enqueue` whose detail names it, `group=<g>` (beside `priority=<n>` when it has one). A
resend under such a value's message id goes to the same queue in the same group. Each dequeue from the
grouped queue (the drain's too) says at its invoke the batch it came in and the group the delivery
carried, `batch=<n> group=<g>`: a batch is one poll's answer to one consumer, numbered across the
workload. Two checks, each a definite failure:

- `group_overlap`: two values of one group came in one batch. Everything a poll answers is handed to its
  consumer at once, none of it settled yet, so the consumer held both unsettled: the one-at-a-time rule
  forbids it whatever came before (nacks, returns, crashes, timeouts, leader changes). The group is the
  one the deliveries carried, the one the server keeps for each message.
- `group_order`: a value of a group first came out of the grouped queue before a value of its group
  that had been confirmed before it was published. A confirmed value is committed, so a value published
  afterwards, by any publisher, is behind it in their group. Where `v1` is ahead of `v2`, the queue
  hands `v2` out only once `v1` has left it, settled or dead-lettered, and until then a nack with
  requeue (delayed or not), a cancel, a consumer's crash or timeout, or an ack that did not land puts
  `v1` back at its group's head; a leader change keeps the replicated groups as they were. A consumer
  records what a poll answered before it settles any of it, and settles nothing else, so `v1` either
  came out and was recorded before `v2` was first handed out, or left the queue without ever being
  recorded there (dead-lettered past its delivery limit, or expired, every hand-out of it lost with a
  poll's answer or a crashed consumer). Hence the check: if `v1` was recorded coming out of the grouped
  queue at all, it was first recorded before `v2` was. Only first dequeues count (a value may come out
  again, at least once; a dead-lettered one comes out of the dead-letter queue, which orders nothing),
  and a value whose publish ended `info` or `fail` is ahead of nothing: it may have landed after later
  ones, or not at all.

Before and after are positions in the history (one event loop writes the ops as they happen), not the
rounded times.
"""

from __future__ import annotations

from collections.abc import Sequence

from jepsen_tests.history import Op
from jepsen_tests.message_ids import resends

GROUP = "group"
BATCH = "batch"


def group_detail(group: str) -> str:
    """The fact an enqueue's detail gives its group with."""
    return f"{GROUP}={group}"


def held_detail(batch: int, group: str | None) -> str:
    """The detail of a dequeue from the grouped queue, at its invoke: its batch and its group, if any."""
    return f"{BATCH}={batch}" if group is None else f"{BATCH}={batch} {group_detail(group)}"


def check_groups(ops: Sequence[Op]) -> tuple[dict[int, int], dict[int, int]]:
    """`(group_overlap, group_order)` (module docstring): the first maps a value to one of its group that
    came in the same batch before it, the second a value to one of its group that was confirmed before it
    was published and first came out after it."""
    return _overlaps(ops), _out_of_order(ops)


def _overlaps(ops: Sequence[Op]) -> dict[int, int]:
    first_in_batch: dict[tuple[str, str, str], int] = {}
    overlaps: dict[int, int] = {}
    for op in ops:
        facts = op.facts
        if op.f == "dequeue" and op.type == "invoke" and op.value is not None and GROUP in facts:
            held_with = first_in_batch.setdefault((op.process, facts[BATCH], facts[GROUP]), op.value)
            if held_with != op.value:
                overlaps[op.value] = held_with
    return dict(sorted(overlaps.items()))


def _out_of_order(ops: Sequence[Op]) -> dict[int, int]:
    grouped = _grouped_publishes(ops)
    first_out: dict[int, int] = {}  # value → the position of its first dequeue from its queue
    for position, op in enumerate(ops):
        if (
            op.f == "dequeue"
            and op.type == "invoke"
            and op.value in grouped
            and grouped[op.value][0] == op.queue
        ):
            first_out.setdefault(op.value, position)
    last_out: dict[tuple[str, str], tuple[int, int]] = {}  # (queue, group) → (first dequeue, value) of
    # its confirmed value first out last
    behind: dict[int, tuple[int, int]] = {}  # value → last_out of its group when it was published
    for op in ops:
        if op.f not in ("enqueue", "resend") or op.value not in grouped:
            continue
        group = grouped[op.value]
        if op.type == "invoke" and group in last_out:
            behind[op.value] = last_out[group]
        elif op.type == "ok" and op.value in first_out:
            last_out[group] = max(last_out.get(group, (-1, -1)), (first_out[op.value], op.value))
    return {
        value: ahead
        for value, (ahead_out, ahead) in sorted(behind.items())
        if value in first_out and first_out[value] < ahead_out
    }


def _grouped_publishes(ops: Sequence[Op]) -> dict[int, tuple[str, str]]:
    """Each value published in a group → its queue and group; a resend is in its first value's."""
    grouped = {
        op.value: (op.queue, op.facts[GROUP])
        for op in ops
        if op.f == "enqueue"
        and op.type == "invoke"
        and op.value is not None
        and op.queue is not None
        and GROUP in op.facts
    }
    for resent, (first, _) in resends(ops).items():
        if first in grouped:
            grouped[resent] = grouped[first]
    return grouped
