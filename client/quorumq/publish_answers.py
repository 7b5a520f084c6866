"""What a publish's answer says: the ids a queue confirmed the messages with, and for a publish through an
exchange, those of every queue it reached (RoutedPublish)."""

from dataclasses import dataclass
from typing import Any

from quorumq.errors import ProtocolError, QuorumqError


@dataclass(frozen=True)
class RoutedPublish:
    """What a publish through an exchange did. `routed`: the ids each queue it reached confirmed its
    copies with; `positions`: which messages of the publish (0-based) those copies are, in the same order;
    `unroutable`: the positions of the messages that reached no queue, which were dropped (an alternate
    exchange that took them counts as routing them)."""

    routed: dict[str, list[int]]
    positions: dict[str, list[int]]
    unroutable: list[int]


def confirmed_ids(status: int, answer: Any, count: int, publisher: str, seq: int) -> list[int]:
    """The ids one queue confirmed a publish of `count` messages with (`answer`: its `ids` and
    `duplicate`). QuorumqError `ids_forgotten` when `publisher`'s `seq` was enqueued so long ago that its
    ids are forgotten, ProtocolError when the answer carries no ids or not `count` of them."""
    try:
        ids = [int(message_id) for message_id in answer["ids"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(status, "bad_response", f"publish answer without ids: {answer!r}") from exc
    if not ids and answer.get("duplicate"):
        enqueued = f"seq {seq} of publisher {publisher} was enqueued long ago"
        raise QuorumqError(status, "ids_forgotten", enqueued + "; its ids are forgotten")
    if len(ids) != count:
        raise ProtocolError(status, "short_ids", f"{count} messages published but {len(ids)} ids")
    return ids


def routed_publish(status: int, answer: Any, count: int, publisher: str, seq: int) -> RoutedPublish:
    """The RoutedPublish an exchange's answer to a publish of `count` messages says (`routed`: each
    queue's own publish answer, with the `positions` of its copies when it took only some; `unroutable`);
    the errors of `confirmed_ids`."""
    try:
        answers = dict(answer["routed"])
        unroutable = [int(position) for position in answer.get("unroutable", [])]
        positions = {
            queue: [int(p) for p in queue_answer.get("positions", range(count))]
            for queue, queue_answer in answers.items()
        }
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ProtocolError(status, "bad_response", f"not a routed publish answer: {answer!r}") from exc
    routed = {
        queue: confirmed_ids(status, answers[queue], len(taken), publisher, seq)
        for queue, taken in positions.items()
    }
    return RoutedPublish(routed, positions, unroutable)
