"""Publishes through a fanout exchange, checked copy by copy (issue 41's exchanges).

A publisher may publish a value through a fanout exchange bound to several queues: an op `enqueue`
whose `queue` is the exchange and whose detail names the bound queues, `fanout=<q1>,<q2>`. A resend
under the message id of such a value goes through the exchange too (`resend`, `queue` the exchange,
detail `first=<value>`). Each bound queue holds its own copy of the value, so the checker counts every
dequeue against a copy: the queue the value came out of, or the queue whose dead letters it came out
of (`jepsen_tests.workload.dead_letter_source`).

- `fanout_missing`: a value whose publish through the exchange was confirmed (`ok`: every bound queue
  committed its copy) never came out of one of the queues, nor of its dead-letter queue: a lost copy,
  which no fault excuses. A value lost from every queue is in `lost` as well. A publish whose outcome is
  unknown, or that was refused (by one queue: the others may have taken their copy), may have left any
  of its copies out.

A value that comes out of a queue it was not published to, directly or through the exchange, is in
`wrong_queue` as any other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from jepsen_tests.history import Op

FANOUT = "fanout"


def fanout_detail(queues: Iterable[str]) -> str:
    """The detail of an enqueue through a fanout exchange bound to `queues`."""
    return f"{FANOUT}={','.join(queues)}"


def fanned_queues(op: Op) -> tuple[str, ...]:
    """The queues an enqueue's detail says it was fanned out to (none for a publish to one queue)."""
    queues = op.facts.get(FANOUT)
    return tuple(queues.split(",")) if queues else ()


def check_fanout(ops: Iterable[Op], copies: Mapping[tuple[int, str | None], int]) -> dict[int, list[str]]:
    """`fanout_missing`: each value confirmed through a fanout exchange → the bound queues none of whose
    copies came out (`copies`: ok dequeues per value and copy)."""
    missing: dict[int, list[str]] = {}
    for op in ops:
        queues = fanned_queues(op)
        if op.f == "enqueue" and op.type == "ok" and op.value is not None and queues:
            absent = [queue for queue in queues if not copies.get((op.value, queue))]
            if absent:
                missing[op.value] = absent
    return dict(sorted(missing.items()))
