"""Where a publish to an exchange goes, by RabbitMQ's rules, from one view of the exchanges and
bindings: pure, built once per view and asked once per publish.

Each exchange matches its own bindings by its type (direct, fanout, topic, headers); a matched
exchange destination routes in turn, each exchange at most once per publish; an exchange whose bindings
match nothing hands the message to its `alternate-exchange`. The default exchange ("") routes to the
queue its routing key names and takes no bindings.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Protocol

from cluster.routing.headers_match import headers_match
from cluster.routing.topic_trie import TopicTrie
from metadata_state.records import EXCHANGE_DESTINATION, QUEUE_DESTINATION, BindingRecord, ExchangeRecord

DEFAULT_EXCHANGE = ""
ALTERNATE_EXCHANGE = "alternate-exchange"

_Destination = tuple[str, str]  # (QUEUE_DESTINATION or EXCHANGE_DESTINATION, name)


class _Matcher(Protocol):
    def bind(self, binding: BindingRecord) -> None: ...

    def match(self, routing_key: str, headers: Mapping[str, Any]) -> Collection[_Destination]: ...


class _Direct:
    """Destinations by binding key, equal to the routing key."""

    def __init__(self) -> None:
        self._by_key: dict[str, set[_Destination]] = {}

    def bind(self, binding: BindingRecord) -> None:
        self._by_key.setdefault(binding.routing_key, set()).add(_destination(binding))

    def match(self, routing_key: str, headers: Mapping[str, Any]) -> Collection[_Destination]:
        return self._by_key.get(routing_key, ())


class _Fanout:
    """Every destination, whatever the key."""

    def __init__(self) -> None:
        self._all: set[_Destination] = set()

    def bind(self, binding: BindingRecord) -> None:
        self._all.add(_destination(binding))

    def match(self, routing_key: str, headers: Mapping[str, Any]) -> Collection[_Destination]:
        return self._all


class _Topic:
    """Destinations by binding key pattern (`topic_trie`)."""

    def __init__(self) -> None:
        self._trie: TopicTrie[_Destination] = TopicTrie()

    def bind(self, binding: BindingRecord) -> None:
        self._trie.bind(binding.routing_key, _destination(binding))

    def match(self, routing_key: str, headers: Mapping[str, Any]) -> Collection[_Destination]:
        return self._trie.match(routing_key)


class _Headers:
    """Destinations whose binding arguments the headers match (`headers_match`), tested one by one."""

    def __init__(self) -> None:
        self._bindings: list[tuple[Mapping[str, Any], _Destination]] = []

    def bind(self, binding: BindingRecord) -> None:
        self._bindings.append((binding.arguments, _destination(binding)))

    def match(self, routing_key: str, headers: Mapping[str, Any]) -> Collection[_Destination]:
        return {destination for arguments, destination in self._bindings if headers_match(arguments, headers)}


_MATCHERS: dict[str, Callable[[], _Matcher]] = {
    "direct": _Direct,
    "fanout": _Fanout,
    "topic": _Topic,
    "headers": _Headers,
}


def _destination(binding: BindingRecord) -> _Destination:
    return (binding.destination_type, binding.destination)


class RoutingTable:
    """The exchanges (declared and builtin, as given) and bindings of every vhost, matched by type. A
    binding whose source is not among the exchanges (the default exchange's, say) routes nothing."""

    def __init__(self, exchanges: Iterable[ExchangeRecord], bindings: Iterable[BindingRecord]) -> None:
        self._matchers: dict[tuple[str, str], _Matcher] = {}
        self._alternates: dict[tuple[str, str], str] = {}
        for exchange in exchanges:
            name = (exchange.vhost, exchange.name)
            self._matchers[name] = _MATCHERS[exchange.type]()
            if ALTERNATE_EXCHANGE in exchange.arguments:
                self._alternates[name] = exchange.arguments[ALTERNATE_EXCHANGE]
        for binding in bindings:
            matcher = self._matchers.get((binding.vhost, binding.source))
            if matcher is not None:
                matcher.bind(binding)

    def route(
        self,
        vhost: str,
        exchange: str,
        routing_key: str,
        headers: Mapping[str, Any],
        queue_exists: Callable[[str], bool],
    ) -> frozenset[str]:
        """The queues of `vhost` a message published to `exchange` goes to: those its bindings reach,
        through exchange destinations and alternate exchanges, for which `queue_exists`. An exchange
        takes its alternate only when its own bindings match no destination at all (a queue that is
        gone or an exchange that routes nowhere still counts as one). An unknown exchange routes
        nowhere."""
        queues: set[str] = set()
        visited = {exchange}
        pending = [exchange]
        while pending:
            name = pending.pop()
            if name == DEFAULT_EXCHANGE:
                queues.add(routing_key)
                continue
            matcher = self._matchers.get((vhost, name))
            if matcher is None:
                continue
            destinations = matcher.match(routing_key, headers)
            alternate = self._alternates.get((vhost, name))
            if not destinations and alternate is not None:
                destinations = ((EXCHANGE_DESTINATION, alternate),)
            for kind, destination in destinations:
                if kind == QUEUE_DESTINATION:
                    queues.add(destination)
                elif destination not in visited:
                    visited.add(destination)
                    pending.append(destination)
        return frozenset(queue for queue in queues if queue_exists(queue))
