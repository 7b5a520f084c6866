"""The checks a declare or a bind passes before it is proposed (`cluster.routing.exchange_checks`)."""

from __future__ import annotations

from typing import Any

import pytest

from cluster.routing.exchange_checks import (
    RoutingError,
    checked_binding_arguments,
    checked_exchange_arguments,
    checked_exchange_name,
    checked_exchange_type,
    is_reserved,
)
from metadata_state.records import BUILTIN_EXCHANGES, EXCHANGE_TYPES


@pytest.mark.parametrize(
    "name", ["orders", "amq.direct", "événements.été", "a" * 255, "with space", "日本" * 42]
)
def test_names_of_at_most_255_utf8_bytes_without_control_characters_pass(name: str) -> None:
    assert checked_exchange_name(name) == name


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "must not be empty"),
        ("a" * 256, "256 bytes of UTF-8, more than 255"),
        ("é" * 128, "256 bytes of UTF-8, more than 255"),
        ("line\nbreak", "control character"),
        ("nul\x00", "control character"),
        ("del\x7f", "control character"),
        ("c1\x85", "control character"),
        ("lone\udc80surrogate", "not valid UTF-8"),
    ],
)
def test_names_that_are_empty_too_long_not_utf8_or_with_control_characters_are_refused(
    name: str, reason: str
) -> None:
    with pytest.raises(RoutingError, match=reason):
        checked_exchange_name(name)


def test_the_length_limit_can_be_lowered() -> None:
    assert checked_exchange_name("abcd", max_length=4) == "abcd"
    with pytest.raises(RoutingError, match="more than 3"):
        checked_exchange_name("abcd", max_length=3)


def test_names_starting_with_amq_dot_are_reserved() -> None:
    assert all(is_reserved(name) for name in BUILTIN_EXCHANGES)
    assert is_reserved("amq.mine")
    assert not is_reserved("amq") and not is_reserved("AMQ.mine") and not is_reserved("my.amq.x")


def test_only_the_known_exchange_types_pass() -> None:
    assert [checked_exchange_type(kind) for kind in EXCHANGE_TYPES] == list(EXCHANGE_TYPES)
    for kind in ("x-consistent-hash", "Direct", ""):
        with pytest.raises(RoutingError, match=f"unknown exchange type '{kind}'"):
            checked_exchange_type(kind)


def test_exchange_arguments_keep_unknown_keys_and_want_an_alternate_exchange_named() -> None:
    arguments = {"alternate-exchange": "unrouted", "x-custom": [1, {"a": None}], "other": 1.5}
    assert checked_exchange_arguments(arguments) == arguments
    for alternate in ("", 3, None, ["ae"]):
        with pytest.raises(RoutingError, match="alternate-exchange"):
            checked_exchange_arguments({"alternate-exchange": alternate})


@pytest.mark.parametrize(
    "arguments",
    [
        {"x-bytes": b"raw"},
        {"x-nested": [{"when": object()}]},
        {"x-map": {1: "not a string key"}},
        {"x-nan": float("nan")},
        {"x-inf": [float("inf")]},
        {"x-tuple": (1, 2)},
    ],
)
def test_arguments_must_be_json_values(arguments: dict[str, Any]) -> None:
    with pytest.raises(RoutingError):
        checked_exchange_arguments(arguments)
    for kind in EXCHANGE_TYPES:
        with pytest.raises(RoutingError):
            checked_binding_arguments(kind, arguments)


def test_a_headers_binding_wants_a_known_x_match() -> None:
    for kind in ("all", "any", "all-with-x", "any-with-x"):
        assert checked_binding_arguments("headers", {"x-match": kind, "a": 1}) == {"x-match": kind, "a": 1}
    assert checked_binding_arguments("headers", {"a": None}) == {"a": None}  # all, by default
    for unknown in ("most", 1, None):
        with pytest.raises(RoutingError, match="Invalid x-match field value"):
            checked_binding_arguments("headers", {"x-match": unknown})
    assert checked_binding_arguments("direct", {"x-match": "most"}) == {"x-match": "most"}  # not tested there


def test_a_headers_binding_tests_only_scalars() -> None:
    with pytest.raises(RoutingError, match="not a scalar"):
        checked_binding_arguments("headers", {"format": ["pdf", "zip"]})
    with pytest.raises(RoutingError, match="not a scalar"):
        checked_binding_arguments("headers", {"x-match": "any-with-x", "x-tenant": {"id": 1}})
    untested = {"x-match": "all", "x-note": {"owner": ["team"]}}  # x- arguments take no part with all
    assert checked_binding_arguments("headers", untested) == untested
    assert checked_binding_arguments("topic", {"format": ["pdf"]}) == {"format": ["pdf"]}


def test_the_checked_arguments_are_a_copy() -> None:
    arguments = {"alternate-exchange": "ae"}
    checked = checked_exchange_arguments(arguments)
    checked["extra"] = 1
    assert arguments == {"alternate-exchange": "ae"}
