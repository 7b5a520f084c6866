"""Content filters (`cluster.routing.content_filter`): filters printed from random trees evaluate as a
plain reference evaluator says, and the rules by example: paths, JSON types, missing fields, `in`,
`matches`, precedence, bodies that are not JSON or are too large, and errors at evaluation."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster.routing.content_filter import MAX_BODY_BYTES, MessageContent, compile_filter

# -- the reference: a filter as a tree, printed as text and evaluated plainly ------------------------

ABSENT = object()  # a path the message does not have
NAMES = ["a", "b", "x-tenant", "in", "items"]  # "x-tenant" needs brackets; "in" is a keyword
SCALAR = st.sampled_from(
    [0, 1, 1.0, -2.5, 1e20, True, False, None, "1", "true", "", "eu", "us", "it's", 'say "hi"']
)
JSON = st.recursive(
    SCALAR,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(NAMES), inner, max_size=3),
    max_leaves=6,
)
STEP = st.one_of(st.sampled_from(NAMES), st.integers(0, 2))
PATH = st.tuples(st.just("path"), st.sampled_from(["headers", "body"]), st.lists(STEP, max_size=2))
LITERAL = st.tuples(st.just("literal"), SCALAR)
VALUE = st.one_of(PATH, LITERAL)
REGEX = st.sampled_from(["^e", "u$", "'", "^$", "[0-9]", "s.y"])
COMPARISON = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])
TEST = st.one_of(
    st.tuples(st.just("compare"), COMPARISON, VALUE, VALUE),
    st.tuples(st.just("in"), VALUE, st.lists(SCALAR, min_size=1, max_size=3)),
    st.tuples(st.just("matches"), VALUE, REGEX),
    st.tuples(st.just("exists"), PATH),
)
TREE = st.recursive(
    TEST,
    lambda inner: st.one_of(
        st.tuples(st.just("not"), inner),
        st.tuples(st.sampled_from(["and", "or"]), st.lists(inner, min_size=2, max_size=3)),
    ),
    max_leaves=8,
)
HEADERS = st.dictionaries(st.sampled_from(NAMES), JSON, max_size=4)
BODY = st.one_of(
    JSON.map(lambda value: json.dumps(value).encode()),
    st.dictionaries(st.sampled_from(NAMES), JSON).map(lambda fields: json.dumps(fields).encode()),
    st.just(b"not json"),
    st.just(json.dumps({"a": "eu", "pad": "x" * MAX_BODY_BYTES}).encode()),  # too large to look at
)
PRECEDENCE = {"or": 1, "and": 2, "not": 3}


def literal_text(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return json.dumps(value)  # numbers, true, false, null as JSON writes them


def value_text(value: tuple[Any, ...]) -> str:
    if value[0] == "literal":
        return literal_text(value[1])
    text = value[1]
    for step in value[2]:
        if isinstance(step, int):
            text += f"[{step}]"
        elif re.fullmatch(r"[A-Za-z_]\w*", step):
            text += "." + step
        else:
            text += f"[{literal_text(step)}]"
    return text


def printed(tree: tuple[Any, ...], around: int = 0) -> str:
    """`tree` as filter text, with parentheses only where precedence needs them."""
    kind = tree[0]
    if kind in ("and", "or"):
        text = f" {kind} ".join(printed(part, PRECEDENCE[kind]) for part in tree[1])
    elif kind == "not":
        text = "not " + printed(tree[1], PRECEDENCE["not"])
    elif kind == "compare":
        return f"{value_text(tree[2])} {tree[1]} {value_text(tree[3])}"
    elif kind == "in":
        return f"{value_text(tree[1])} in ({', '.join(literal_text(item) for item in tree[2])})"
    elif kind == "matches":
        return f"{value_text(tree[1])} matches {literal_text(tree[2])}"
    else:
        return f"exists({value_text(tree[1])})"
    return f"({text})" if PRECEDENCE[kind] < around else text


def json_type(value: Any) -> str | None:
    """The JSON type two values must share to compare; None for arrays, objects and absent values."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "boolean"
    if type(value) in (int, float):
        return "number"
    if type(value) is str:
        return "string"
    return None


def reference(tree: tuple[Any, ...], headers: Mapping[str, Any], body: bytes) -> bool:
    """What `tree` says of a message, told plainly."""
    try:
        document = json.loads(body) if len(body) <= MAX_BODY_BYTES else ABSENT
    except ValueError:
        document = ABSENT

    def value_of(value: tuple[Any, ...]) -> Any:
        if value[0] == "literal":
            return value[1]
        found: Any = headers if value[1] == "headers" else document
        for step in value[2]:
            if isinstance(step, str):
                found = found[step] if isinstance(found, dict) and step in found else ABSENT
            else:
                found = found[step] if isinstance(found, list) and step < len(found) else ABSENT
        return found

    def compare(operator: str, left: Any, right: Any) -> bool:
        kind = json_type(left)
        if kind is None or kind != json_type(right):
            return False
        if operator in ("=", "!="):
            return (left == right) == (operator == "=")
        if kind not in ("number", "string"):
            return False
        return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[operator]

    def holds(node: tuple[Any, ...]) -> bool:
        kind = node[0]
        if kind == "and":
            return all(holds(part) for part in node[1])
        if kind == "or":
            return any(holds(part) for part in node[1])
        if kind == "not":
            return not holds(node[1])
        if kind == "compare":
            return compare(node[1], value_of(node[2]), value_of(node[3]))
        if kind == "in":
            return any(compare("=", value_of(node[1]), item) for item in node[2])
        if kind == "matches":
            got = value_of(node[1])
            return isinstance(got, str) and re.search(node[2], got) is not None
        return value_of(node[1]) is not ABSENT

    return holds(tree)


@settings(max_examples=1000, deadline=None)
@given(TEST, HEADERS, BODY)
def test_each_kind_of_test_evaluates_as_the_reference(
    tree: tuple[Any, ...], headers: dict[str, Any], body: bytes
) -> None:
    text = printed(tree)
    assert compile_filter(text).matches(MessageContent(headers, body)) == reference(tree, headers, body), text


@settings(max_examples=400, deadline=None)
@given(TREE, st.lists(st.tuples(HEADERS, BODY), min_size=1, max_size=4))
def test_a_printed_filter_evaluates_as_the_reference(
    tree: tuple[Any, ...], messages: list[tuple[dict[str, Any], bytes]]
) -> None:
    text = printed(tree)
    content_filter = compile_filter(text)
    for headers, body in messages:
        assert content_filter.matches(MessageContent(headers, body)) == reference(tree, headers, body), text


# -- the rules by example ---------------------------------------------------------------------------

ORDER = json.dumps(
    {
        "region": "eu",
        "total": 250,
        "items": [{"sku": "A-1", "qty": 2}, {"sku": "B-7", "qty": 1}],
        "customer": {"vip": True, "tier": None, "the name": "Zoë"},
    }
).encode()
HEADERS_OF_ORDER = {"type": "order.created", "x-tenant": "acme", "priority": 5, "urgent": True}


def passes(
    text: str, headers: Mapping[str, Any] = HEADERS_OF_ORDER, body: bytes | memoryview = ORDER
) -> bool:
    return compile_filter(text).matches(MessageContent(headers, body))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("headers.type = 'order.created'", True),
        ("headers['x-tenant'] = \"acme\"", True),
        ("headers.priority >= 5 and headers.priority < 6", True),
        ("body.region = 'eu'", True),
        ("body.items[1].sku = 'B-7'", True),
        ("body.items[2].sku = 'B-7'", False),  # no third item
        ("body.customer['the name'] = 'Zoë'", True),
        ("body.total > 100.5", True),
        ("body.total = 250.0", True),  # JSON has one kind of number
        ("body.total = '250'", False),  # a string never equals a number
        ("body.total != '250'", False),  # nor differs from it: comparisons need one type
        ("headers.urgent = 1", False),  # true is no number
        ("headers.urgent = true", True),
        ("headers.urgent < true", False),  # only strings and numbers are ordered
        ("headers.type > 'order'", True),  # strings by code point
        ("body.customer.tier = null", True),
        ("exists(body.customer.tier)", True),  # a null is there
        ("body.customer.missing = null", False),
        ("exists(body.customer.missing)", False),
        ("headers.missing != 'x'", False),  # a missing field compares with nothing
        ("not headers.missing = 'x'", True),
        ("body.items = body.items", False),  # nor does an array
        ("headers.priority in (1, 5, 'x')", True),
        ("headers.priority in ('5')", False),
        ("headers.urgent in (1, 'true')", False),  # true is neither
        ("body.total in (250.0)", True),
        ("body.region in ('us', 'ap')", False),
        ("headers.type matches '^order\\.'", True),  # backslashes as written: RE2's escape
        ("headers.type matches 'created$'", True),
        ("headers.type matches '^created'", False),
        ("headers.priority matches '5'", False),  # only strings match
        ("body.region = 'us' or body.region = 'eu' and headers.priority = 1", False),  # and binds first
        ("(body.region = 'us' or body.region = 'eu') and headers.priority = 5", True),
        ("not body.region = 'us' and headers.priority = 5", True),  # not binds before and
        ("not not body.region = 'eu'", True),
        ("'it''s' = \"it's\"", True),  # a quote doubled inside its string
        ("body.in = 1 or headers.not = 2 or body.body = 3", False),  # keywords as field names
        ("exists(body) and exists(headers)", True),
        ("\n  body.region\t= 'eu'\n", True),
    ],
)
def test_the_rules_by_example(text: str, expected: bool) -> None:
    assert passes(text) is expected


def test_a_body_that_is_not_json_or_too_large_matches_no_body_test_but_headers_still_do() -> None:
    for body in (
        b"<order/>",
        b"",
        b"\xff\xfe",
        b"[" * 50_000,
        json.dumps({"region": "eu", "pad": "x" * MAX_BODY_BYTES}).encode(),
    ):
        assert not passes("body.region = 'eu'", body=body)
        assert not passes("exists(body)", body=body)
        assert passes("not exists(body.region) and headers.priority = 5", body=body)
    fits = json.dumps({"region": "eu", "pad": "x" * (MAX_BODY_BYTES - 100)}).encode()
    assert len(fits) <= MAX_BODY_BYTES and passes("body.region = 'eu'", body=fits)
    assert passes("body.items[0].qty = 2", body=memoryview(ORDER))  # a body read back from the log


class Failing(Mapping[str, Any]):
    """Headers that fail when read."""

    def __getitem__(self, name: str) -> Any:
        raise RuntimeError("unreadable")

    def __contains__(self, name: object) -> bool:
        raise RuntimeError("unreadable")

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def test_a_filter_that_raises_as_it_is_evaluated_is_a_non_match() -> None:
    assert not passes("headers.a = 1", headers=Failing())
    assert not passes("not headers.a = 1", headers=Failing())  # not a failure turned into a match
    assert not passes("headers.a matches 'a'", headers={"a": "\ud800"})  # RE2 takes no lone surrogate
