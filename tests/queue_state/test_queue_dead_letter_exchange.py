"""Dead-lettering through an exchange (`x-dead-letter-exchange`, `x-dead-letter-routing-key`; queue
operations version 12), RabbitMQ's way: one way per queue, or a queue named by `x-dead-letter-queue`,
which routes as the default exchange does by the queue's name; policy keys where the queue's own way
wins whole; the machine's dead letters naming their route, at most or at least once."""

from __future__ import annotations

from typing import Any

import pytest
from queue_state_helpers import enqueue, make_machine

from queue_state.arguments import RUNTIME_ARGUMENTS, ArgumentError, DeadLetterRoute, parse_arguments
from queue_state.command_codec import arguments_version, decode_command, encode_command
from queue_state.commands import (
    ApplyPolicy,
    Discard,
    DlxCheckout,
    EntryMeta,
    Get,
    InvalidCommand,
    UpdateConfig,
)
from queue_state.effects import DeadLetter, Deliveries, ForgetBodies
from queue_state.policy import POLICY_KEYS, definition_arguments, effective_config

AT_LEAST_ONCE = {"dead_letter_strategy": "at-least-once", "overflow": "reject-publish"}


def test_a_queue_dead_letters_through_an_exchange_by_a_routing_key_or_each_letter_s_own() -> None:
    assert parse_arguments({"x-dead-letter-exchange": "dlx"}).dead_letter_route == DeadLetterRoute(
        "dlx", None
    )
    keyed = parse_arguments({"x-dead-letter-exchange": "dlx", "x-dead-letter-routing-key": "dead"})
    assert keyed.dead_letter_route == DeadLetterRoute("dlx", "dead")
    assert parse_arguments({"x-dead-letter-exchange": ""}).dead_letter_route == DeadLetterRoute("", None)
    assert parse_arguments({"x-dead-letter-queue": "dlq"}).dead_letter_route == DeadLetterRoute("", "dlq")
    assert parse_arguments({}).dead_letter_route is None


def test_rule_dead_letters_go_one_way_a_queue_or_an_exchange() -> None:
    with pytest.raises(ArgumentError) as both:
        parse_arguments({"x-dead-letter-queue": "dlq", "x-dead-letter-exchange": "dlx"})
    assert both.value.argument == "x-dead-letter-exchange" and "x-dead-letter-queue" in both.value.reason
    with pytest.raises(ArgumentError) as both_keys:
        definition_arguments({"dead-letter-queue": "dlq", "dead-letter-exchange": "dlx"})
    assert both_keys.value.argument == "dead-letter-exchange"
    with pytest.raises(InvalidCommand):
        ApplyPolicy("p", {"x-dead-letter-queue": "dlq", "x-dead-letter-exchange": "dlx"}, 1)


def test_rule_a_routing_key_needs_an_exchange_as_rabbitmq_s_does() -> None:
    with pytest.raises(ArgumentError) as alone:
        parse_arguments({"x-dead-letter-routing-key": "dead"})
    assert alone.value.argument == "x-dead-letter-routing-key"
    with pytest.raises(ArgumentError):
        parse_arguments({"x-dead-letter-queue": "dlq", "x-dead-letter-routing-key": "dead"})
    assert definition_arguments({"dead-letter-routing-key": "dead"}) == {"x-dead-letter-routing-key": "dead"}


def test_both_are_runtime_arguments_and_policy_keys() -> None:
    assert {"x-dead-letter-exchange", "x-dead-letter-routing-key"} <= RUNTIME_ARGUMENTS
    assert POLICY_KEYS["dead-letter-exchange"] == "x-dead-letter-exchange"
    assert POLICY_KEYS["dead-letter-routing-key"] == "x-dead-letter-routing-key"


@pytest.mark.parametrize(
    ("declared", "policy", "route"),
    [
        ({}, {"dead-letter-exchange": "dlx", "dead-letter-routing-key": "k"}, DeadLetterRoute("dlx", "k")),
        ({"x-dead-letter-exchange": "own"}, {"dead-letter-exchange": "dlx"}, DeadLetterRoute("own", None)),
        ({"x-dead-letter-exchange": "own"}, {"dead-letter-routing-key": "k"}, DeadLetterRoute("own", "k")),
        (  # the queue's own way wins whole: the policy's routing key is not the dead-letter queue's
            {"x-dead-letter-queue": "dlq"},
            {"dead-letter-exchange": "dlx", "dead-letter-routing-key": "k"},
            DeadLetterRoute("", "dlq"),
        ),
        ({"x-dead-letter-exchange": "own"}, {"dead-letter-queue": "dlq"}, DeadLetterRoute("own", None)),
        ({}, {"dead-letter-queue": "dlq"}, DeadLetterRoute("", "dlq")),
    ],
)
def test_rule_a_policy_s_way_of_dead_lettering_applies_only_where_the_queue_names_none_or_the_same(
    declared: dict[str, Any], policy: dict[str, Any], route: DeadLetterRoute
) -> None:
    config = effective_config(parse_arguments(declared), definition_arguments(policy), "q")
    assert config.dead_letter_route == route


@pytest.mark.parametrize(
    "arguments",
    [{"x-dead-letter-exchange": "dlx"}, {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "k"}],
)
def test_rule_dead_lettering_through_an_exchange_travels_from_operations_version_12_only(
    arguments: dict[str, Any],
) -> None:
    """A node of version 11 cannot parse a configuration that names them: it never receives one."""
    assert arguments_version(arguments) == 12
    for command in (ApplyPolicy("p", arguments, 1), UpdateConfig(parse_arguments(arguments))):
        assert decode_command(encode_command(command, 12)) == command
        for version in range(1, 12):
            with pytest.raises(ValueError):
                encode_command(command, version)
    assert arguments_version({"x-dead-letter-queue": "dlq", "x-dead-letter-strategy": "at-least-once"}) == 0


def test_at_most_once_dead_letters_name_their_route() -> None:
    m = make_machine(dead_letter_exchange="dlx", dead_letter_routing_key="dead")
    enqueue(m, 0, count=2)
    m.apply(EntryMeta(1), Get("h", count=2, auto_ack=False))
    _, effects = m.apply(EntryMeta(2), Discard((1, 2), "h", reason="bad"))
    assert [type(effect) for effect in effects] == [DeadLetter, ForgetBodies]
    assert effects[0] == DeadLetter("rejected", DeadLetterRoute("dlx", "dead"), effects[0].deliveries, "bad")
    assert m.stats().dead_lettered == {"rejected": 2}


def test_at_least_once_is_in_force_with_an_exchange_and_a_runtime_change_of_route_keeps_the_letters() -> None:
    m = make_machine(dead_letter_exchange="dlx", **AT_LEAST_ONCE)
    assert m.config.dead_letters_at_least_once
    enqueue(m, 0, count=2)
    m.apply(EntryMeta(1), Get("h", count=2, auto_ack=False))
    assert m.apply(EntryMeta(2), Discard((1, 2), "h"))[1] == []  # held as pending dead letters
    to_a_queue = {
        "x-dead-letter-queue": "dlq",
        "x-dead-letter-strategy": "at-least-once",
        "x-overflow": "reject-publish",
    }
    m.apply(EntryMeta(3), UpdateConfig(parse_arguments(to_a_queue)))
    assert m.config.dead_letter_route == DeadLetterRoute("", "dlq") and m.dead_letter_ids() == [1, 2]
    reply, _ = m.apply(EntryMeta(4), DlxCheckout("w", prefetch=5))
    assert isinstance(reply, Deliveries) and [d.id for d in reply.deliveries] == [1, 2]
