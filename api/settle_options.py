"""What an ack, a nack or a touch asks for (`POST .../ack`, `.../nack` and `.../touch`, an `ack`,
`nack` or `touch` frame on the stream), declared once: each struct checks the body and gives its schema."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from msgspec import Meta

from api.request_bodies import RequestBody
from api.validation import bad
from cluster.queues.queue_limits import INT64_MAX, MAX_REASON_CHARS
from cluster.queues.queue_results import Outcome

Ids = Annotated[
    list[Annotated[int, Meta(ge=0, le=INT64_MAX)]],
    Meta(min_length=1, description="the ids of messages delivered to the caller"),
]


class Ack(RequestBody):
    """Settle delivered messages: they leave the queue."""

    ids: Ids


class Touch(RequestBody):
    """Extend the hold of delivered messages."""

    ids: Ids


class Nack(RequestBody):
    """Give delivered messages back: to the queue (a failed delivery unless `failed` is false), after
    `delay` ms when given; or, without `requeue`, to the dead letters with an optional `reason`."""

    ids: Ids
    requeue: Annotated[bool, Meta(description="back to the queue (default) or dead-lettered")] = True
    failed: Annotated[
        bool, Meta(description="with requeue: counts toward x-delivery-limit (default); false does not")
    ] = True
    reason: Annotated[
        Annotated[str, Meta(max_length=MAX_REASON_CHARS)] | None,
        Meta(description="without requeue: kept as reason-text in the dead letter's x-death"),
    ] = None
    delay: Annotated[
        Annotated[int, Meta(ge=0, le=INT64_MAX)] | None,
        Meta(
            description="with requeue: ms the messages wait before they are ready again (0: at once, "
            "whatever the queue's x-delayed-retry-*)"
        ),
    ] = None


SETTLES: dict[str, type[Ack] | type[Nack]] = {"ack": Ack, "nack": Nack}
"""The body of each kind of settle, by the name of its path and of its stream frame."""


@dataclass(frozen=True, slots=True)
class SettleOptions:
    """The ids to settle and how: a nack that requeues counts a failed delivery unless `failed` is
    false (a plain return) and may wait `delay_ms` before it is ready again; one that does not (a reject)
    may give a `reason`, kept with the dead letter."""

    ids: tuple[int, ...]
    outcome: Outcome
    failed: bool = True
    reason: str | None = None
    delay_ms: int | None = None


def settle_options(body: Ack | Nack) -> SettleOptions:
    """What an ack or a nack body asks for (400 for a reason on a nack that requeues, or a delay on one
    that does not)."""
    ids = tuple(body.ids)
    if isinstance(body, Ack):
        return SettleOptions(ids, Outcome.ACK)
    if body.reason is not None and body.requeue:
        raise bad("reason goes with a nack that does not requeue: it is kept with the dead letter")
    if body.delay is not None and not body.requeue:
        raise bad("delay goes with a nack that requeues: the message waits that long before it is ready")
    outcome = Outcome.REQUEUE if body.requeue else Outcome.DISCARD
    return SettleOptions(ids, outcome, body.failed, body.reason, body.delay)


def touch_answer(hold_ms: int, warning: str | None) -> dict[str, Any]:
    """The answer to a touch: how long the touched messages may now be held without another touch (ms),
    and which ids were not held (a warning, as for a settle)."""
    return {"ok": True, "hold_ms": hold_ms} | ({} if warning is None else {"warning": warning})
