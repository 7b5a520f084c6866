"""The routing table (`cluster.routing.routing_table`): against a naive recursion over the binding list
through random exchanges, bindings, cycles, alternate exchanges and content filters, and by RabbitMQ's
rules one by one."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_topic_and_headers_matching import reference

from cluster.routing import content_filter
from cluster.routing.headers_match import KINDS, headers_match
from cluster.routing.routing_table import RoutingTable
from metadata_state.records import (
    BUILTIN_EXCHANGES,
    EXCHANGE_DESTINATION,
    EXCHANGE_TYPES,
    QUEUE_DESTINATION,
    BindingRecord,
    ExchangeRecord,
)
from metadata_state.vhost_names import DEFAULT_VHOST, qualified

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
BODY = st.sampled_from([b"", b'{"n": 2}', b'{"n": 0, "format": "pdf"}', b"[2]", b"not json"])


def field_n(body: bytes) -> Any:
    """The field `n` of a JSON object body, None where there is none."""
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value.get("n") if isinstance(value, dict) else None


FILTERS: dict[str, Callable[[Mapping[str, Any], bytes], bool]] = {
    # each filter beside what it means, told in plain Python
    "headers.format = 'pdf'": lambda headers, body: headers.get("format") == "pdf",
    "body.n > 1": lambda headers, body: type(field_n(body)) is int and field_n(body) > 1,
    "not exists(body.n) or headers['x-tenant'] = 1": lambda headers, body: (
        field_n(body) is None or (type(headers.get("x-tenant")) is int and headers["x-tenant"] == 1)
    ),
    "broken (": lambda headers, body: False,  # stored before filters were checked: passes nothing
}
FILTER = st.sampled_from(list(FILTERS))
BINDING_ARGUMENTS = st.tuples(st.sampled_from([None, *KINDS]), HEADERS, st.none() | FILTER).map(
    lambda kind_tests_filter: {
        **({} if kind_tests_filter[0] is None else {"x-match": kind_tests_filter[0]}),
        **kind_tests_filter[1],
        **({} if kind_tests_filter[2] is None else {"x-filter": kind_tests_filter[2]}),
    }
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
    body: bytes,
    queue_exists: Callable[[str], bool],
) -> set[str]:
    """RabbitMQ's routing told plainly: every binding of the exchange tested by its type and its
    filter, exchange destinations and alternates routed in turn, each exchange once."""
    records = {(record.vhost, record.name): record for record in exchanges}
    visited: set[str] = set()

    def matches(kind: str, binding: BindingRecord) -> bool:
        if "x-filter" in binding.arguments and not FILTERS[binding.arguments["x-filter"]](headers, body):
            return False
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

    reached = {qualified(vhost, queue) for queue in route(exchange) if "/" not in queue}
    return {queue for queue in reached if queue_exists(queue)}


@settings(max_examples=200, deadline=None)
@given(
    exchange_records(),
    st.lists(binding_records(), min_size=10, max_size=40),
    st.lists(st.tuples(KEY, HEADERS, BODY, EXISTING), min_size=1, max_size=5),
)
def test_the_table_routes_as_the_naive_recursion(
    declared: list[ExchangeRecord],
    bindings: list[BindingRecord],
    publishes: list[tuple[str, dict[str, Any], bytes, frozenset[str]]],
) -> None:
    table = RoutingTable(declared, bindings)
    for routing_key, headers, body, existing in publishes:
        for vhost in VHOSTS:
            for exchange in EXCHANGE_NAMES:
                routed = table.route(vhost, exchange, routing_key, headers, body, existing.__contains__)
                expected = naive_route(
                    declared, bindings, vhost, exchange, routing_key, headers, body, existing.__contains__
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
    table: RoutingTable,
    exchange: str,
    key: str = "",
    headers: Mapping[str, Any] | None = None,
    body: bytes = b"",
) -> set[str]:
    return set(table.route(DEFAULT_VHOST, exchange, key, headers or {}, body, every_queue))


def test_the_default_exchange_routes_to_the_queue_its_key_names_if_it_exists() -> None:
    table = RoutingTable([], [to_queue("", "other", "orders")])  # the default exchange takes no bindings
    assert table.route(DEFAULT_VHOST, "", "orders", {}, b"", {"orders"}.__contains__) == {"orders"}
    assert table.route(DEFAULT_VHOST, "", "gone", {}, b"", {"orders"}.__contains__) == frozenset()


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
    assert table.route(DEFAULT_VHOST, "main", "", {}, b"", {"unrouted"}.__contains__) == frozenset()


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
    assert table.route(DEFAULT_VHOST, "f", "", {}, b"", {"here"}.__contains__) == {"here"}


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
    assert table.route("other", "amq.topic", "shop.eu", {}, b"", every_queue) == {"other/other-eu"}
    assert route(table, "x") == set()
    assert table.route("other", "x", "", {}, b"", every_queue) == frozenset()


def test_a_filtered_binding_takes_a_message_only_when_its_exchange_and_its_filter_both_match() -> None:
    table = RoutingTable(
        [exchange("t", "topic"), exchange("h", "headers")],
        [
            to_queue("t", "eu-big", "order.*.eu", **{"x-filter": "body.total >= 100"}),
            to_queue("t", "pdf", "#", **{"x-filter": "headers.format = 'pdf'"}),
            to_queue("h", "with-x", **{"x-match": "all-with-x", "x-filter": "body.total > 1", "kind": "a"}),
        ],
    )
    big = b'{"total": 250}'
    assert route(table, "t", "order.1.eu", body=big) == {"eu-big"}
    assert route(table, "t", "order.1.us", body=big) == set()  # the key does not match
    assert route(table, "t", "order.1.eu", body=b'{"total": 5}') == set()  # the filter does not
    assert route(table, "t", "x", {"format": "pdf"}, big) == {"pdf"}
    # on a headers exchange, x-filter is no header to test, even with all-with-x
    assert route(table, "h", headers={"kind": "a"}, body=big) == {"with-x"}
    assert route(table, "h", headers={"kind": "a"}, body=b"{}") == set()


def test_bindings_filtered_out_leave_the_way_to_the_alternate_open() -> None:
    table = RoutingTable(
        [exchange("main", "fanout", alternate="ae"), exchange("ae", "fanout"), exchange("next", "fanout")],
        [
            to_queue("main", "urgent", **{"x-filter": "headers.priority = 'high'"}),
            BindingRecord(
                DEFAULT_VHOST, "main", "next", EXCHANGE_DESTINATION, "", {"x-filter": "exists(body.id)"}
            ),
            to_queue("next", "with-id"),
            to_queue("ae", "rest"),
        ],
    )
    assert route(table, "main", headers={"priority": "high"}) == {"urgent"}
    assert route(table, "main", body=b'{"id": 3}') == {"with-id"}
    assert route(table, "main", headers={"priority": "low"}, body=b"[]") == {"rest"}


def test_a_stored_filter_that_does_not_compile_passes_nothing() -> None:
    table = RoutingTable(
        [exchange("f", "fanout")],
        [to_queue("f", "broken", **{"x-filter": "headers.a = "}), to_queue("f", "odd", **{"x-filter": 7})],
    )
    assert route(table, "f", headers={"a": 1}) == set()


def test_each_binding_filter_runs_once_and_the_body_is_decoded_once_only_when_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    decoded: list[bytes | memoryview] = []
    evaluated: list[str] = []
    decode, matches = content_filter._json_body, content_filter.ContentFilter.matches

    def counted_decode(body: bytes | memoryview) -> Any:
        decoded.append(body)
        return decode(body)

    def counted_matches(self: content_filter.ContentFilter, content: content_filter.MessageContent) -> bool:
        evaluated.append(self.text)
        return matches(self, content)

    monkeypatch.setattr(content_filter, "_json_body", counted_decode)
    monkeypatch.setattr(content_filter.ContentFilter, "matches", counted_matches)
    table = RoutingTable(
        [exchange("t", "topic")],
        [
            to_queue("t", "a", "order.*", **{"x-filter": "body.n = 1"}),
            to_queue("t", "a", "#", **{"x-filter": "body.n = 1"}),  # the same target: one test
            to_queue("t", "b", "#", **{"x-filter": "body.m = 1 or body.n = 1"}),
            to_queue("t", "c", "#", **{"x-filter": "headers.h = 1"}),
        ],
    )
    assert route(table, "t", "order.1", {"h": 1}, b'{"n": 1}') == {"a", "b", "c"}
    assert len(decoded) == 1 and sorted(evaluated) == [
        "body.m = 1 or body.n = 1",
        "body.n = 1",
        "headers.h = 1",
    ]
    decoded.clear()
    assert route(table, "t", "other", {"h": 2}, b"{}") == set()
    assert len(decoded) == 1
    table = RoutingTable([exchange("f", "fanout")], [to_queue("f", "c", **{"x-filter": "headers.h = 1"})])
    decoded.clear()
    assert route(table, "f", "", {"h": 1}, b'{"n": 1}') == {"c"}
    assert decoded == []


def test_rule_a_routing_key_naming_a_queue_of_another_vhost_reaches_none() -> None:
    """The default exchange routes by queue name within the publisher's vhost: `other/q` from `/`
    does not name queue q of vhost `other` (decision 0029)."""
    table = RoutingTable([], [])
    assert table.route(DEFAULT_VHOST, "", "other/q", {}, b"", every_queue) == frozenset()
    assert table.route("other", "", "q", {}, b"", every_queue) == {"other/q"}
