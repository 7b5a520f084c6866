"""parse_arguments: every argument accepted, every kind of bad value rejected naming the argument."""

from __future__ import annotations

import dataclasses

import pytest

from queue_state.arguments import (
    AT_LEAST_ONCE_RULE,
    DISCARD_ARGUMENTS,
    ArgumentError,
    QueueConfig,
    QueueDefaults,
    differs_only_where_defaulted,
    parse_arguments,
)

EVERY_ARGUMENT = {
    "x-queue-type": "quorum",
    "x-quorum-initial-group-size": 3,
    "x-quorum-target-group-size": 5,
    "x-queue-leader-locator": "balanced",
    "x-max-length": 1000,
    "x-max-length-bytes": 10_000_000,
    "x-overflow": "reject-publish",
    "x-delivery-limit": 3,
    "x-dead-letter-queue": "dlq",
    "x-dead-letter-strategy": "at-least-once",
    "x-message-ttl": 60_000,
    "x-expires": 3_600_000,
    "x-single-active-consumer": True,
    "x-lease-period": 30_000,
    "x-consumer-timeout": 60_000,
    "x-delayed-retry-type": "failed",
    "x-delayed-retry-min": 500,
    "x-delayed-retry-max": 30_000,
    "x-max-priority": 9,
    "x-max-unacked": 100,
    "x-discard-mark": 5000,
    "x-discard-below-priority": 3,
    "x-dequeue-interval-ms": 20,
    "x-dequeue-window": "22:00-06:00",
    "x-dedupe-window": 120_000,
    "x-dedupe-max": 5000,
    "x-message-groups": True,
}
THROUGH_AN_EXCHANGE = {"x-dead-letter-exchange": "dlx", "x-dead-letter-routing-key": "dead"}
"""The other way of dead-lettering, which EVERY_ARGUMENT cannot name beside `x-dead-letter-queue`."""


def test_every_argument_is_accepted_into_its_field() -> None:
    config = parse_arguments(EVERY_ARGUMENT)
    assert config == QueueConfig(
        queue_type="quorum",
        initial_group_size=3,
        target_group_size=5,
        leader_locator="balanced",
        max_length=1000,
        max_length_bytes=10_000_000,
        overflow="reject-publish",
        delivery_limit=3,
        dead_letter_queue="dlq",
        dead_letter_strategy="at-least-once",
        message_ttl=60_000,
        expires=3_600_000,
        single_active_consumer=True,
        lease_period=30_000,
        consumer_timeout=60_000,
        delayed_retry_type="failed",
        delayed_retry_min=500,
        delayed_retry_max=30_000,
        max_priority=9,
        max_unacked=100,
        discard_mark=5000,
        discard_below_priority=3,
        dequeue_interval_ms=20,
        dequeue_window="22:00-06:00",
        dedupe_window=120_000,
        dedupe_max=5000,
        message_groups=True,
    )


def test_dead_lettering_through_an_exchange_is_accepted_into_its_fields() -> None:
    config = parse_arguments(THROUGH_AN_EXCHANGE)
    assert config == QueueConfig(dead_letter_exchange="dlx", dead_letter_routing_key="dead")
    assert parse_arguments({"x-dead-letter-exchange": ""}).dead_letter_exchange == ""  # the default one


def test_every_config_field_has_an_argument() -> None:
    fields = {f.name for f in dataclasses.fields(QueueConfig)}
    assert set(parse_arguments(EVERY_ARGUMENT).to_arguments()) == set(EVERY_ARGUMENT)
    assert set(parse_arguments(THROUGH_AN_EXCHANGE).to_arguments()) == {"x-queue-type", *THROUGH_AN_EXCHANGE}
    assert len(fields) == len(EVERY_ARGUMENT | THROUGH_AN_EXCHANGE)


def test_unset_arguments_are_none_and_the_type_defaults_to_quorum() -> None:
    config = parse_arguments({})
    assert config.queue_type == "quorum"
    assert all(
        getattr(config, f.name) is None for f in dataclasses.fields(QueueConfig) if f.name != "queue_type"
    )


def test_to_arguments_is_canonical_so_redeclares_compare_equal() -> None:
    config = parse_arguments(EVERY_ARGUMENT)
    assert parse_arguments(config.to_arguments()) == config
    assert parse_arguments({"x-max-length": 5}).to_arguments() == {
        "x-queue-type": "quorum",
        "x-max-length": 5,
    }
    reordered = dict(reversed(list(EVERY_ARGUMENT.items())))
    assert list(parse_arguments(reordered).to_arguments()) == list(config.to_arguments())


_ITS_PAIR = {
    "x-discard-mark": {"x-discard-below-priority": 1},
    "x-discard-below-priority": {"x-discard-mark": 1},
    "x-dead-letter-routing-key": {"x-dead-letter-exchange": "dlx"},
}


@pytest.mark.parametrize(
    ("argument", "value"),
    [
        ("x-queue-type", "classic"),
        ("x-queue-type", 1),
        ("x-quorum-initial-group-size", 0),
        ("x-quorum-initial-group-size", True),
        ("x-quorum-target-group-size", "3"),
        ("x-queue-leader-locator", "random"),
        ("x-max-length", -1),
        ("x-max-length", 1.5),
        ("x-max-length-bytes", False),
        ("x-max-length-bytes", 2**63),
        ("x-overflow", "reject-publish-dlx"),
        ("x-delivery-limit", -2),
        ("x-delivery-limit", None),
        ("x-dead-letter-queue", ""),
        ("x-dead-letter-queue", 7),
        ("x-dead-letter-strategy", "exactly-once"),
        ("x-dead-letter-exchange", 7),
        ("x-dead-letter-exchange", None),
        ("x-dead-letter-exchange", "x" * 256),
        ("x-dead-letter-exchange", "\ud800"),
        ("x-dead-letter-routing-key", "é" * 128),
        ("x-dead-letter-routing-key", ["a"]),
        ("x-message-ttl", -5),
        ("x-expires", 0),
        ("x-single-active-consumer", 1),
        ("x-single-active-consumer", "true"),
        ("x-consumer-timeout", 0),
        ("x-delayed-retry-type", "sometimes"),
        ("x-delayed-retry-min", -1),
        ("x-delayed-retry-max", "5s"),
        ("x-lease-period", 0),
        ("x-max-unacked", 0),
        ("x-max-unacked", "10"),
        ("x-discard-mark", -1),
        ("x-discard-below-priority", 32),
        ("x-discard-below-priority", -1),
        ("x-dequeue-interval-ms", 0),
        ("x-dedupe-window", 0),
        ("x-dedupe-window", "2m"),
        ("x-dedupe-max", 0),
        ("x-dedupe-max", 1_000_001),
        ("x-message-groups", 1),
        ("x-message-groups", "true"),
        ("x-dequeue-interval-ms", 1.5),
        ("x-dequeue-window", "22:00"),
        ("x-dequeue-window", "08:00-08:00"),
        ("x-dequeue-window", 2200),
        ("x-unknown", 1),
        ("max-length", 1),
    ],
)
def test_bad_values_are_rejected_naming_the_argument(argument: str, value: object) -> None:
    with pytest.raises(ArgumentError) as caught:
        parse_arguments({argument: value, **_ITS_PAIR.get(argument, {})})
    assert caught.value.argument == argument
    assert caught.value.reason


@pytest.mark.parametrize("overflow", [None, "drop-head"])
def test_at_least_once_requires_overflow_reject_publish(overflow: str | None) -> None:
    arguments = {"x-dead-letter-strategy": "at-least-once", "x-dead-letter-queue": "dlq"}
    if overflow is not None:
        arguments["x-overflow"] = overflow
    with pytest.raises(ArgumentError) as caught:
        parse_arguments(arguments)
    assert (caught.value.argument, caught.value.reason) == ("x-dead-letter-strategy", AT_LEAST_ONCE_RULE)


@pytest.mark.parametrize("given", DISCARD_ARGUMENTS)
def test_rule_the_discard_mark_and_its_priority_are_set_together(given: str) -> None:
    with pytest.raises(ArgumentError, match="needs") as caught:
        parse_arguments({given: 3})
    assert caught.value.argument == given
    other = next(argument for argument in DISCARD_ARGUMENTS if argument != given)
    assert other in caught.value.reason
    both = parse_arguments({"x-discard-mark": 10, "x-discard-below-priority": 0})
    assert (both.discard_mark, both.discard_below_priority) == (10, 0)


def test_non_dict_arguments_are_rejected() -> None:
    with pytest.raises(ArgumentError):
        parse_arguments(["x-max-length", 1])


def test_at_least_once_is_in_force_only_with_a_target_and_reject_publish() -> None:
    with_target = parse_arguments(EVERY_ARGUMENT)
    without_target = dataclasses.replace(with_target, dead_letter_queue=None)
    assert with_target.dead_letters_at_least_once
    assert not without_target.dead_letters_at_least_once


def test_queue_defaults_fill_only_what_a_declare_leaves_out() -> None:
    defaults = QueueDefaults(delivery_limit=-1, initial_group_size=5, leader_locator="balanced")
    given = parse_arguments({"x-delivery-limit": 3})
    assert defaults.apply(given) == QueueConfig(
        delivery_limit=3, initial_group_size=5, leader_locator="balanced"
    )
    assert QueueDefaults().apply(QueueConfig()) == QueueConfig(delivery_limit=20)
    with pytest.raises(ArgumentError, match="x-queue-leader-locator"):
        QueueDefaults(leader_locator="nearest")


def test_a_stored_queue_differs_only_where_defaulted_when_it_agrees_on_every_given_argument() -> None:
    given = parse_arguments({"x-max-length": 10})
    for stored in (
        {"x-max-length": 10},
        {"x-max-length": 10, "x-delivery-limit": 5, "x-quorum-initial-group-size": 1},
    ):
        assert differs_only_where_defaulted(given, parse_arguments(stored))
    for stored in ({"x-max-length": 11}, {"x-max-length": 10, "x-message-ttl": 5}, {}):
        assert not differs_only_where_defaulted(given, parse_arguments(stored))
    assert not differs_only_where_defaulted(
        parse_arguments({"x-delivery-limit": 3}), parse_arguments({"x-delivery-limit": 20})
    )
