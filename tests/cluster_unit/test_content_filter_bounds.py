"""Content filters are checked when a binding is declared (`checked_binding_arguments`), so that no
filter that fails to parse, exceeds its bounds or holds a regex RE2 refuses reaches the metadata log."""

from __future__ import annotations

from typing import Any

import pytest

from cluster.routing.content_filter import (
    MAX_FILTER_CHARS,
    MAX_FILTER_NODES,
    MAX_NESTING,
    MessageContent,
    compile_filter,
)
from cluster.routing.exchange_checks import RoutingError, checked_binding_arguments


def refusal(text: Any, exchange_type: str = "topic") -> str:
    """Why a binding with `x-filter: text` is refused."""
    with pytest.raises(RoutingError) as refused:
        checked_binding_arguments(exchange_type, {"x-filter": text})
    assert str(refused.value).startswith("invalid arg 'x-filter': ")
    return str(refused.value)


@pytest.mark.parametrize("exchange_type", ["direct", "fanout", "topic", "headers"])
def test_a_filter_that_compiles_passes_on_every_exchange_type(exchange_type: str) -> None:
    arguments = {"x-filter": "headers.region = 'eu' and body.total > 100"}
    assert checked_binding_arguments(exchange_type, arguments) == arguments


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            "",
            "expected a path (headers..., body...), a literal, 'not', 'exists' or '(' at character 1, "
            "found the end of the filter",
        ),
        (
            "headers.a == 1",
            "expected a path (headers..., body...), a literal, 'not', 'exists' or '(' at "
            "character 12, found '='",
        ),
        ("headers.a = 'eu", "the string at character 13 is not closed"),
        ("headers.a = 1 and", "at character 18, found the end of the filter"),
        ("(headers.a = 1", "expected ')' at character 15"),
        ("headers.a = 1)", "expected 'and', 'or' or the end of the filter at character 14, found ')'"),
        ("headers.a = 1 headers.b = 2", "expected 'and', 'or' or the end of the filter at character 15"),
        ("headers.a", "expected a comparison, 'in' or 'matches' at character 10"),
        ("region = 'eu'", "at character 1, found 'region'"),
        ("headers.x-tenant = 1", "unexpected character '-' at character 10"),  # headers['x-tenant']
        ("exists(1)", "expected a path: headers... or body... at character 8, found '1'"),
        ("headers.a in ()", "expected a literal at character 15, found ')'"),
        ("headers.a in ('eu', body.b)", "expected a literal at character 21, found 'body'"),
        ("headers.a matches 1", "expected a quoted regular expression after matches at character 19"),
        ("body.items[-1] = 1", "expected an index (0, 1, ...) or a quoted field name at character 12"),
        ("body.items[1.5] = 1", "expected an index (0, 1, ...) or a quoted field name at character 12"),
        ("body.a = 1e999", "the number at character 10 is out of range"),
        ("headers.a = @", "unexpected character '@' at character 13"),
        ("headers.a AND headers.b", "at character 11, found 'AND'"),  # keywords are lower case
    ],
)
def test_a_filter_that_does_not_parse_is_refused_with_where_and_why(text: str, reason: str) -> None:
    assert reason in refusal(text)


@pytest.mark.parametrize("text", [None, 7, ["headers.a = 1"], {"filter": "headers.a = 1"}])
def test_a_filter_is_text(text: Any) -> None:
    assert "a filter is text" in refusal(text)


def test_a_filter_of_at_most_4096_characters_passes() -> None:
    text = "headers.a = 1"
    assert compile_filter(text.ljust(MAX_FILTER_CHARS)).text.strip() == text
    assert f"is {MAX_FILTER_CHARS + 1} characters long, more than {MAX_FILTER_CHARS}" in refusal(
        text.ljust(MAX_FILTER_CHARS + 1)
    )


def test_a_filter_of_at_most_256_nodes_passes() -> None:
    tests = " or ".join(["headers.a = 1"] * 51)  # 51 tests of 4 nodes (headers, a, =, 1) and 50 `or`
    assert compile_filter("not not " + tests).matches(MessageContent({"a": 1}, b""))  # 256
    assert f"has 257 nodes, more than {MAX_FILTER_NODES}" in refusal("not not not " + tests)
    assert "has 261 nodes" in refusal(tests + " or headers.b in (1, 2, 3)")  # or, headers, b, in, 1, 2, 3
    nots = "not " * (MAX_FILTER_NODES - 4) + "headers.a = 1"  # punctuation counts for nothing
    assert compile_filter(f"(((({nots}))))").matches(MessageContent({"a": 1}, b""))


def test_parentheses_nest_at_most_32_deep_and_deeper_ones_are_refused_not_a_crash() -> None:
    deep = "(" * MAX_NESTING + "headers.a = 1" + ")" * MAX_NESTING
    assert compile_filter(deep).matches(MessageContent({"a": 1}, b""))
    assert f"parentheses nest deeper than {MAX_NESTING} at character {MAX_NESTING + 1}" in refusal(
        "(" + deep + ")"
    )
    assert "nest deeper" in refusal("(" * 2000 + "headers.a = 1" + ")" * 2000)  # 4013 characters


@pytest.mark.parametrize(
    "regex",
    [
        r"(a)\1",  # a backreference
        r"order(?=\.created)",  # lookahead
        r"(?<!x)order",  # lookbehind
        r"a{1001}",  # beyond RE2's repetition bound
        "[unclosed",
    ],
)
def test_a_regex_re2_refuses_is_refused(regex: str) -> None:
    reason = refusal(f"headers.type matches '{regex}'")
    assert "the regex at character 22 is not one RE2 accepts (no backreferences or lookaround)" in reason


def test_a_regex_beyond_1000_re2_instructions_is_refused() -> None:
    assert compile_filter("headers.type matches '(?:abcdefgh){100}'")
    reason = refusal("headers.type matches '(?:abcdefgh){200}'")
    assert "the regex at character 22 is too large (at most 1000 RE2 instructions)" in reason
