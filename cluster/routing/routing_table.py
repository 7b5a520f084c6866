"""Where a publish to an exchange goes, by RabbitMQ's rules, from one view of the exchanges and
bindings: pure, built once per view and asked once per publish.

Each exchange matches its own bindings by its type (direct, fanout, topic, headers), and a binding with
a content filter (`x-filter`, compiled here once per table) only when its filter passes the message
too; a matched exchange destination routes in turn, each exchange at most once per publish; an exchange
whose bindings match nothing hands the message to its `alternate-exchange`. The default exchange ("")
routes to the queue its routing key names and takes no bindings.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Protocol

from cluster.routing.content_filter import FILTER, ContentFilter, FilterError, MessageContent, compile_filter
from cluster.routing.headers_match import headers_match
from cluster.routing.topic_trie import TopicTrie
from metadata_state.records import EXCHANGE_DESTINATION, QUEUE_DESTINATION, BindingRecord, ExchangeRecord
from metadata_state.vhost_names import SEPARATOR, qualified

DEFAULT_EXCHANGE = ""
ALTERNATE_EXCHANGE = "alternate-exchange"

_Destination = tuple[str, str]  # (QUEUE_DESTINATION or EXCHANGE_DESTINATION, name)
_Target = tuple[_Destination, ContentFilter | None]  # a binding's destination, and its filter if any


class _Matcher(Protocol):
    def bind(self, binding: BindingRecord, target: _Target) -> None: ...

    def match(self, routing_key: str, headers: Mapping[str, Any]) -> Collection[_Target]: ...


class _Direct:
    """Targets by binding key, equal to the routing key."""

    def __init__(self) -> None:
        self._by_key: dict[str, set[_Target]] = {}

    def bind(self, binding: BindingRecord, target: _Target) -> None:
        self._by_key.setdefault(binding.routing_key, set()).add(target)

    def match(self, routing_key: str, headers: Mapping[str, Any]) -> Collection[_Target]:
        return self._by_key.get(routing_key, ())


class _Fanout:
    """Every target, whatever the key."""

    def __init__(self) -> None:
        self._all: set[_Target] = set()

    def bind(self, binding: BindingRecord, target: _Target) -> None:
        self._all.add(target)

    def match(self, routing_key: str, headers: Mapping[str, Any]) -> Collection[_Target]:
        return self._all


class _Topic:
    """Targets by binding key pattern (`topic_trie`)."""

    def __init__(self) -> None:
        self._trie: TopicTrie[_Target] = TopicTrie()

    def bind(self, binding: BindingRecord, target: _Target) -> None:
        self._trie.bind(binding.routing_key, target)

    def match(self, routing_key: str, headers: Mapping[str, Any]) -> Collection[_Target]:
        return self._trie.match(routing_key)


class _Headers:
    """Targets whose binding arguments the headers match (`headers_match`), tested one by one."""

    def __init__(self) -> None:
        self._bindings: list[tuple[Mapping[str, Any], _Target]] = []

    def bind(self, binding: BindingRecord, target: _Target) -> None:
        self._bindings.append((binding.arguments, target))

    def match(self, routing_key: str, headers: Mapping[str, Any]) -> Collection[_Target]:
        return {target for arguments, target in self._bindings if headers_match(arguments, headers)}


_MATCHERS: dict[str, Callable[[], _Matcher]] = {
    "direct": _Direct,
    "fanout": _Fanout,
    "topic": _Topic,
    "headers": _Headers,
}


_NOTHING = ContentFilter("", lambda content: False)


def _filter(arguments: Mapping[str, Any], compiled: dict[str, ContentFilter]) -> ContentFilter | None:
    """The content filter of a binding with `arguments` (None without `x-filter`), compiled once per
    text into `compiled`, so that bindings with the same filter share it. A filter that does not compile
    (stored before filters were checked) passes nothing: a filter keeps messages out when in doubt."""
    if FILTER not in arguments:
        return None
    text = arguments[FILTER]
    if not isinstance(text, str):
        return _NOTHING
    if text not in compiled:
        try:
            compiled[text] = compile_filter(text)
        except FilterError:
            compiled[text] = _NOTHING
    return compiled[text]


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
        compiled: dict[str, ContentFilter] = {}
        for binding in bindings:
            matcher = self._matchers.get((binding.vhost, binding.source))
            if matcher is not None:
                destination = (binding.destination_type, binding.destination)
                matcher.bind(binding, (destination, _filter(binding.arguments, compiled)))

    def route(
        self,
        vhost: str,
        exchange: str,
        routing_key: str,
        headers: Mapping[str, Any],
        body: bytes | memoryview,
        queue_exists: Callable[[str], bool],
    ) -> frozenset[str]:
        """The queues of `vhost` (by `qualified` name) a message with `headers` and `body` published to
        `exchange` goes to: those its bindings reach, through exchange destinations and alternate
        exchanges, for which `queue_exists`. An exchange takes its alternate only when its own bindings
        match no destination at all (a queue that is gone or an exchange that routes nowhere still counts
        as one; a binding whose filter fails the message does not). An unknown exchange routes nowhere.
        A binding's filter is evaluated at most once, and the body decoded at most once, when a filter
        first reads it."""
        content = MessageContent(headers, body)
        queues: set[str] = set()
        visited = {exchange}
        pending = [exchange]
        while pending:
            name = pending.pop()
            if name == DEFAULT_EXCHANGE:
                queues.add(routing_key)  # a key naming a queue of another vhost reaches none
                continue
            matcher = self._matchers.get((vhost, name))
            if matcher is None:
                continue
            destinations = [
                destination
                for destination, content_filter in matcher.match(routing_key, headers)
                if content_filter is None or content_filter.matches(content)
            ]
            alternate = self._alternates.get((vhost, name))
            if not destinations and alternate is not None:
                destinations = [(EXCHANGE_DESTINATION, alternate)]
            for kind, destination in destinations:
                if kind == QUEUE_DESTINATION:
                    queues.add(destination)
                elif destination not in visited:
                    visited.add(destination)
                    pending.append(destination)
        reached = (qualified(vhost, queue) for queue in queues if SEPARATOR not in queue)
        return frozenset(queue for queue in reached if queue_exists(queue))
