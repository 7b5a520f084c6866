"""The routing table (`cluster.routing.routing_table`): against a naive recursion over the binding list
through random exchanges, bindings, cycles and alternate exchanges, and by RabbitMQ's rules one by one."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_topic_and_headers_matching import reference

from cluster.routing.headers_match import KINDS, headers_match
from cluster.routing.routing_table import RoutingTable
from metadata_state.records import (
    BUILTIN_EXCHANGES,
    DEFAULT_VHOST,
    EXCHANGE_DESTINATION,
    EXCHANGE_TYPES,
    QUEUE_DESTINATION,
    BindingRecord,
    ExchangeRecord,
)

VHOSTS = [DEFAULT_VHOST, "other"]
VHOST = st.one_of(st.just(DEFAULT_VHOST), st.sampled_from(VHOSTS))  # mostly "/", so that routes meet
DECLARED = ["x1", "x2", "x3"]
EXCHANGE_NAMES = [*DECLARED, *BUILTIN_EXCHANGES, "", "missing"]
EXCHANGE_NAME = st.one_of(st.sampled_from(DECLARED), st.sampled_from(EXCHANGE_NAMES))
QUEUES = ["q1", "q2", "a", "b"]  # some are routing keys too, for the default exchange
QUEUE = st.sampled_from(QUEUES)
WORD = st.sampled_from(["", "a", "b"])  # few words, so that direct and topic keys meet
KEY = st.lists(WORD, min_size=1, max_size=3).map(".".join)
BINDING_KEY = st.lists(st.one_of(WORD, st.sampled_from(["*", "#"])), min_size=1, max_size=3).map(".".join)
EXISTING = st.one_of(st.just(frozenset(QUEUES)), st.frozensets(QUEUE))  # often all of them
HEADER_VALUE = st.sampled_from(["pdf", 1, True, None])
HEADERS = st.dictionaries(st.sampled_from(["format", "x-tenant"]), HEADER_VALUE, max_size=2)
BINDING_ARGUMENTS = st.tuples(st.sampled_from([None, *KINDS]), HEADERS).map(
    lambda kind_tests: kind_tests[1] if kind_tests[0] is None else {"x-match": kind_tests[0], **kind_tests[1]}
)


def builtins(vhost: str) -> list[ExchangeRecord]:
    return [ExchangeRecord(vhost, name, kind) for name, kind in BUILTIN_EXCHANGES.items()]


@st.composite
def exchange_records(draw: st.DrawFn) -> list[ExchangeRecord]:
    declared = []
    for vhost in VHOSTS:
        for name in DECLARED:
            if draw(st.integers(0, 3)) == 0:
                continue  # undeclared in this vhost, yet bindings and publishes may name it
            alternate = draw(st.one_of(st.none(), EXCHANGE_NAME.filter(bool)))
            arguments = {} if alternate is None else {"alternate-exchange": alternate}
            declared.append(
                ExchangeRecord(vhost, name, draw(st.sampled_from(EXCHANGE_TYPES)), arguments=arguments)
            )
        declared.extend(builtins(vhost))
    return declared


@st.composite
def binding_records(draw: st.DrawFn) -> BindingRecord:
    kind, destination = draw(
        st.one_of(
            st.tuples(st.just(QUEUE_DESTINATION), QUEUE),
            st.tuples(st.just(EXCHANGE_DESTINATION), EXCHANGE_NAME),
        )
    )
    return BindingRecord(
        draw(VHOST), draw(EXCHANGE_NAME), destination, kind, draw(BINDING_KEY), draw(BINDING_ARGUMENTS)
    )


def naive_route(
    exchanges: Iterable[ExchangeRecord],
    bindings: list[BindingRecord],
    vhost: str,
    exchange: str,
    routing_key: str,
    headers: Mapping[str, Any],
    queue_exists: Callable[[str], bool],
) -> set[str]:
    """RabbitMQ's routing told plainly: every binding of the exchange tested by its type, exchange
    destinations and alternates routed in turn, each exchange once."""
    records = {(record.vhost, record.name): record for record in exchanges}
    visited: set[str] = set()

    def matches(kind: str, binding: BindingRecord) -> bool:
        if kind == "direct":
            return binding.routing_key == routing_key
        if kind == "topic":
            return reference(binding.routing_key, routing_key)
        if kind == "headers":
            return headers_match(binding.arguments, headers)
        return True  # fanout

    def route(name: str) -> set[str]:
        if name in visited:
            return set()
        visited.add(name)
        if name == "":
            return {routing_key}
        record = records.get((vhost, name))
        if record is None:
            return set()
        matched = [
            binding
            for binding in bindings
            if binding.vhost == vhost and binding.source == name and matches(record.type, binding)
        ]
        if not matched and "alternate-exchange" in record.arguments:
            return route(record.arguments["alternate-exchange"])
        queues: set[str] = set()
        for binding in matched:
            if binding.destination_type == QUEUE_DESTINATION:
                queues.add(binding.destination)
            else:
                queues |= route(binding.destination)
        return queues

    return {queue for queue in route(exchange) if queue_exists(queue)}


@settings(max_examples=200, deadline=None)
@given(
    exchange_records(),
    st.lists(binding_records(), min_size=10, max_size=40),
    st.lists(st.tuples(KEY, HEADERS, EXISTING), min_size=1, max_size=5),
)
def test_the_table_routes_as_the_naive_recursion(
    declared: list[ExchangeRecord],
    bindings: list[BindingRecord],
    publishes: list[tuple[str, dict[str, Any], frozenset[str]]],
) -> None:
    table = RoutingTable(declared, bindings)
    for routing_key, headers, existing in publishes:
        for vhost in VHOSTS:
            for exchange in EXCHANGE_NAMES:
                routed = table.route(vhost, exchange, routing_key, headers, existing.__contains__)
                expected = naive_route(
                    declared, bindings, vhost, exchange, routing_key, headers, existing.__contains__
                )
                assert routed == expected, (vhost, exchange)


def exchange(name: str, kind: str, alternate: str | None = None) -> ExchangeRecord:
    arguments = {} if alternate is None else {"alternate-exchange": alternate}
    return ExchangeRecord(DEFAULT_VHOST, name, kind, arguments=arguments)


def to_queue(source: str, queue: str, key: str = "", **arguments: Any) -> BindingRecord:
    return BindingRecord(DEFAULT_VHOST, source, queue, QUEUE_DESTINATION, key, arguments)


def to_exchange(source: str, destination: str, key: str = "") -> BindingRecord:
    return BindingRecord(DEFAULT_VHOST, source, destination, EXCHANGE_DESTINATION, key)


def every_queue(_name: str) -> bool:
    return True


def route(
    table: RoutingTable, exchange: str, key: str = "", headers: Mapping[str, Any] | None = None
) -> set[str]:
    return set(table.route(DEFAULT_VHOST, exchange, key, headers or {}, every_queue))


def test_the_default_exchange_routes_to_the_queue_its_key_names_if_it_exists() -> None:
    table = RoutingTable([], [to_queue("", "other", "orders")])  # the default exchange takes no bindings
    assert table.route(DEFAULT_VHOST, "", "orders", {}, {"orders"}.__contains__) == {"orders"}
    assert table.route(DEFAULT_VHOST, "", "gone", {}, {"orders"}.__contains__) == frozenset()


def test_each_type_matches_its_own_bindings() -> None:
    table = RoutingTable(
        [exchange("d", "direct"), exchange("f", "fanout"), exchange("t", "topic"), exchange("h", "headers")],
        [
            to_queue("d", "exact", "order.created"),
            to_queue("d", "wild", "order.*"),  # a direct key is no pattern
            to_queue("d", "empty", ""),
            to_queue("f", "all1", "ignored"),
            to_queue("f", "all2"),
            to_queue("t", "one", "order.*"),
            to_queue("t", "any", "#"),
            to_queue("h", "pdf", **{"format": "pdf"}),
            to_queue("h", "either", **{"x-match": "any", "format": "zip", "type": "report"}),
        ],
    )
    assert route(table, "d", "order.created") == {"exact"}
    assert route(table, "d", "") == {"empty"}
    assert route(table, "f", "whatever") == {"all1", "all2"}
    assert route(table, "t", "order.created") == {"one", "any"}
    assert route(table, "t", "order") == {"any"}
    assert route(table, "h", headers={"format": "pdf", "type": "report"}) == {"pdf", "either"}
    assert route(table, "h", headers={"format": "zip"}) == {"either"}


def test_exchange_to_exchange_bindings_are_followed_and_cycles_are_harmless() -> None:
    table = RoutingTable(
        [exchange("a", "fanout"), exchange("b", "direct"), exchange("c", "fanout")],
        [
            to_exchange("a", "b"),
            to_queue("b", "blue", "blue"),
            to_exchange("b", "c", "blue"),
            to_exchange("c", "a"),  # back to the start
            to_queue("c", "all"),
        ],
    )
    assert route(table, "a", "blue") == {"blue", "all"}
    assert route(table, "a", "red") == set()
    assert route(table, "c", "blue") == {"blue", "all"}


def test_an_exchange_whose_bindings_match_nothing_routes_through_its_alternate() -> None:
    table = RoutingTable(
        [exchange("main", "direct", alternate="ae"), exchange("ae", "fanout"), exchange("other", "fanout")],
        [to_queue("main", "known", "known"), to_queue("ae", "unrouted")],
    )
    assert route(table, "main", "known") == {"known"}
    assert route(table, "main", "unknown") == {"unrouted"}


def test_alternates_chain_and_their_cycles_stop() -> None:
    table = RoutingTable(
        [
            exchange("first", "direct", alternate="second"),
            exchange("second", "direct", alternate="third"),
            exchange("third", "fanout"),
            exchange("loop1", "direct", alternate="loop2"),
            exchange("loop2", "direct", alternate="loop1"),
            exchange("self", "direct", alternate="self"),
        ],
        [to_queue("third", "last")],
    )
    assert route(table, "first", "k") == {"last"}
    assert route(table, "loop1", "k") == set()
    assert route(table, "self", "k") == set()


def test_a_matched_destination_that_routes_nowhere_still_keeps_the_alternate_out() -> None:
    table = RoutingTable(
        [exchange("main", "fanout", alternate="ae"), exchange("empty", "fanout"), exchange("ae", "fanout")],
        [to_exchange("main", "empty"), to_queue("main", "deleted"), to_queue("ae", "unrouted")],
    )
    assert table.route(DEFAULT_VHOST, "main", "", {}, {"unrouted"}.__contains__) == frozenset()


def test_unknown_exchanges_route_nowhere() -> None:
    table = RoutingTable(
        [exchange("main", "fanout"), exchange("empty", "fanout", alternate="missing-ae")],
        [to_exchange("main", "missing"), to_queue("missing", "q")],
    )
    assert route(table, "missing") == set()
    assert route(table, "empty") == set()  # nothing matches, and its alternate is unknown
    assert route(table, "main") == set()  # a binding to an unknown exchange


def test_only_queues_that_exist_are_routed_to() -> None:
    table = RoutingTable([exchange("f", "fanout")], [to_queue("f", "here"), to_queue("f", "deleted")])
    assert table.route(DEFAULT_VHOST, "f", "", {}, {"here"}.__contains__) == {"here"}


def test_vhosts_are_apart_and_the_builtins_route_like_declared_exchanges() -> None:
    table = RoutingTable(
        [*builtins(DEFAULT_VHOST), *builtins("other"), ExchangeRecord("other", "x", "fanout")],
        [
            to_queue("amq.topic", "eu", "*.eu"),
            BindingRecord("other", "amq.topic", "other-eu", QUEUE_DESTINATION, "*.eu"),
            to_queue("x", "not-here"),  # a binding of "/" whose source is declared in "other" only
        ],
    )
    assert route(table, "amq.topic", "shop.eu") == {"eu"}
    assert table.route("other", "amq.topic", "shop.eu", {}, every_queue) == {"other-eu"}
    assert route(table, "x") == set()
    assert table.route("other", "x", "", {}, every_queue) == frozenset()
