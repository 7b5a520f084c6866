"""The routing matchers of issue 41 (`cluster.routing`): topic binding keys against a word-by-word
reference, through binds and unbinds in any order, and headers bindings by RabbitMQ's rules."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster.routing.headers_match import BadHeadersBinding, headers_match
from cluster.routing.topic_trie import TopicTrie, words

WORD = st.sampled_from(["", "a", "b", "order", "eu"])
KEY = st.lists(WORD, min_size=1, max_size=5).map(".".join)
BINDING_WORD = st.sampled_from(["", "a", "b", "order", "eu", "*", "#"])
BINDING_KEY = st.lists(BINDING_WORD, min_size=1, max_size=5).map(".".join)


def reference(binding: str, routing: str) -> bool:
    """RabbitMQ's topic rule, word by word: `*` one word, `#` zero or more."""

    @functools.cache
    def match(b: int, r: int) -> bool:
        pattern, key = words(binding), words(routing)
        if b == len(pattern):
            return r == len(key)
        if pattern[b] == "#":
            return any(match(b + 1, skip) for skip in range(r, len(key) + 1))
        return r < len(key) and pattern[b] in ("*", key[r]) and match(b + 1, r + 1)

    return match(0, 0)


def test_the_rules_by_example() -> None:
    trie: TopicTrie[str] = TopicTrie()
    for key, queue in [
        ("order.*", "one"),
        ("order.#", "any"),
        ("#", "all"),
        ("*.eu.#", "eu"),
        ("a..b", "empty"),
    ]:
        trie.bind(key, queue)
    assert trie.match("order") == {"any", "all"}
    assert trie.match("order.created") == {"one", "any", "all"}
    assert trie.match("order.created.eu") == {"any", "all"}
    assert trie.match("shop.eu") == {"eu", "all"}
    assert trie.match("a..b") == {"all", "empty"}
    assert trie.match("") == {"all"}


@settings(max_examples=300)
@given(st.lists(st.tuples(st.booleans(), BINDING_KEY, st.sampled_from(["q1", "q2", "q3"])), max_size=25), KEY)
def test_the_trie_matches_as_the_rule_through_binds_and_unbinds(
    operations: list[tuple[bool, str, str]], routing: str
) -> None:
    trie: TopicTrie[str] = TopicTrie()
    bound: dict[tuple[str, str], int] = {}
    for add, key, queue in operations:
        if add:
            trie.bind(key, queue)
            bound[(key, queue)] = bound.get((key, queue), 0) + 1
        else:
            assert trie.unbind(key, queue) == (bound.get((key, queue), 0) > 0)
            if bound.get((key, queue)):
                bound[(key, queue)] -= 1
    expected = {queue for (key, queue), count in bound.items() if count and reference(key, routing)}
    assert trie.match(routing) == expected


def test_unbinding_every_binding_leaves_an_empty_trie() -> None:
    trie: TopicTrie[str] = TopicTrie()
    for key in ("a.b.c", "a.#", "a.*.c"):
        trie.bind(key, "q")
    for key in ("a.b.c", "a.#", "a.*.c"):
        assert trie.unbind(key, "q")
    assert trie.match("a.b.c") == set() and not trie.unbind("a.b.c", "q")
    assert trie.empty  # the branches were pruned


@pytest.mark.parametrize(
    ("binding", "headers", "matched"),
    [
        ({"format": "pdf", "type": "report"}, {"format": "pdf", "type": "report", "other": 1}, True),
        ({"format": "pdf", "type": "report"}, {"format": "pdf"}, False),
        ({"x-match": "any", "format": "pdf", "type": "report"}, {"format": "pdf"}, True),
        ({"x-match": "any", "format": "pdf"}, {"format": "zip"}, False),
        ({"x-match": "all", "count": 1}, {"count": True}, False),  # typed: 1 is not True
        ({"x-match": "all", "present": None}, {"present": "anything"}, True),
        ({"x-match": "all", "x-tenant": "a"}, {}, True),  # x- arguments take no part
        ({"x-match": "all-with-x", "x-tenant": "a"}, {}, False),
        ({"x-match": "any-with-x", "x-tenant": "a"}, {"x-tenant": "a"}, True),
        ({"x-match": "any"}, {"a": 1}, False),  # nothing to test: any finds none
        ({}, {"a": 1}, True),  # and all finds no mismatch
    ],
)
def test_headers_bindings_match_by_rabbitmqs_rules(binding: dict, headers: dict, matched: bool) -> None:
    assert headers_match(binding, headers) is matched


def test_an_unknown_x_match_is_refused() -> None:
    with pytest.raises(BadHeadersBinding, match="x-match must be one of"):
        headers_match({"x-match": "most"}, {})
