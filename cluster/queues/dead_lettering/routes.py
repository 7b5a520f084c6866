"""Where dead letters go: the queues their source's `DeadLetterRoute` reaches, resolved each time they
are sent from the exchanges and bindings this node applied, as a publish through that exchange is routed
(`RoutingTable.route`, decision 0028). `x-dead-letter-queue` Q is the default exchange with routing key
Q, so both ways of dead-lettering take this one path.

A letter is routed by the route's routing key, or without one by its own (`published_route`: the key it
was published with through a named exchange, else its source queue's name), and goes on with its headers
naming the exchange and routing key it went by (`routed_headers`), as a publish through that exchange
leaves them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from cluster.queues.dead_lettering.messages import publish_parts
from cluster.replication.stored_message import StoredMessage, published_route, routed_headers
from cluster.routing.routing_table import RoutingTable
from metadata_state.vhost_names import name_in_vhost, vhost_of
from queue_state.arguments import DeadLetterRoute


@dataclass(frozen=True, slots=True)
class RoutedLetters:
    """Dead letters as routed: each as it is published (`messages`), and the queues each goes to
    (`queues`, none for a letter the route reaches no queue with)."""

    messages: list[StoredMessage]
    queues: list[frozenset[str]]


class DeadLetterRouter:
    """Routes dead letters through the routing table this node applied (`routing_table()`) to the queues
    that exist here (`declared(queue)`)."""

    def __init__(self, routing_table: Callable[[], RoutingTable], declared: Callable[[str], bool]) -> None:
        self._routing_table = routing_table
        self._declared = declared

    def route(self, route: DeadLetterRoute, source: str, letters: Sequence[StoredMessage]) -> RoutedLetters:
        """`letters` of queue `source` routed along `route`."""
        table = self._routing_table()
        messages, queues = [], []
        for letter in letters:
            key = (
                published_route(letter.headers, name_in_vhost(source))[1]
                if route.routing_key is None
                else route.routing_key
            )
            headers = routed_headers(letter.headers, route.exchange, key)
            messages.append(StoredMessage(letter.body, headers, letter.encoding))
            queues.append(
                table.route(vhost_of(source), route.exchange, key, headers, letter.body, self._declared)
            )
        return RoutedLetters(messages, queues)


def queue_parts(
    messages: Sequence[StoredMessage], queues: Sequence[Collection[str]]
) -> dict[str, list[list[int]]]:
    """Given the queues each of `messages` goes to, the positions of those each queue takes in order, in
    parts that fit one publish (`publish_parts`); the queues in name order."""
    taken: dict[str, list[int]] = {}
    for position, targets in enumerate(queues):
        for queue in targets:
            taken.setdefault(queue, []).append(position)
    return {
        queue: [positions[part] for part in publish_parts([len(messages[p].body) for p in positions])]
        for queue, positions in sorted(taken.items())
    }
