"""Policies as a queue applies them (issue 22, feature 8): a definition's keys, RabbitMQ's rule for the
configuration in force (the declared value wins, except the stricter limit), `ApplyPolicy` in the
machine beside runtime changes, and snapshots that keep the policy (version 7 only with one)."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st
from queue_state_helpers import enqueue, make_machine

from queue_state.arguments import ArgumentError, parse_arguments
from queue_state.commands import ApplyPolicy, Checkout, Discard, EntryMeta, InvalidCommand, UpdateConfig
from queue_state.effects import Enqueued, Rejected
from queue_state.machine import STRATEGY_CHANGED, QueueMachine
from queue_state.policy import POLICY_KEYS, definition_arguments, effective_config


def test_a_definition_names_runtime_arguments_without_their_prefix() -> None:
    assert definition_arguments({"max-length": 5, "target-group-size": 3, "delivery-limit": -1}) == {
        "x-max-length": 5,
        "x-quorum-target-group-size": 3,
        "x-delivery-limit": -1,
    }
    for wrong, named in [
        ({"max-priority": 3}, "max-priority"),  # fixed at declaration: not a policy key
        ({"x-max-length": 3}, "x-max-length"),  # the argument's name, not the key's
        ({"max-length": -1}, "max-length"),
        ({"overflow": "drop-tail"}, "overflow"),
        ({}, "definition"),
        ([1], "definition"),
        ({"discard-mark": 10}, "discard-mark"),  # only with the priority below which it discards
        ({"discard-below-priority": 2, "max-length": 9}, "discard-below-priority"),
        ({"dequeue-window": "8-17"}, "dequeue-window"),
    ]:
        with pytest.raises(ArgumentError) as raised:
            definition_arguments(wrong)
        assert raised.value.argument == named


def test_rule_declared_values_win_except_limits_where_the_stricter_wins() -> None:
    declared = parse_arguments(
        {"x-max-length": 10, "x-message-ttl": 500, "x-overflow": "drop-head", "x-delivery-limit": -1}
    )
    given_policy = {"max-length": 20, "message-ttl": 100, "overflow": "reject-publish"}
    policy = definition_arguments({**given_policy, "delivery-limit": 4, "expires": 9000})
    config = effective_config(declared, policy, "q")
    assert (config.max_length, config.message_ttl, config.overflow) == (10, 100, "drop-head")
    assert config.delivery_limit == 4  # -1 is no limit: any limit is stricter
    assert config.expires == 9000  # unset by the queue: the policy's
    assert effective_config(declared, {}, "q") is declared


@given(
    own=st.one_of(st.none(), st.integers(-1, 50)),
    theirs=st.integers(-1, 50),
)
def test_rule_the_delivery_limit_in_force_is_the_stricter_of_both(own: int | None, theirs: int) -> None:
    declared = parse_arguments({} if own is None else {"x-delivery-limit": own})
    limit = effective_config(declared, {"x-delivery-limit": theirs}, "q").delivery_limit_in_force
    limits = [given for given in (own, theirs) if given is not None and given >= 0]
    assert limit == (min(limits) if limits else None)


@given(own=st.one_of(st.none(), st.integers(1, 50)), theirs=st.integers(1, 50))
def test_rule_the_max_unacked_in_force_is_the_smaller_of_both(own: int | None, theirs: int) -> None:
    declared = parse_arguments({} if own is None else {"x-max-unacked": own})
    in_force = effective_config(declared, definition_arguments({"max-unacked": theirs}), "q").max_unacked
    assert in_force == (theirs if own is None else min(own, theirs))


def test_the_backlog_controls_are_policy_keys_where_the_declared_value_wins_but_for_the_cap() -> None:
    declared = parse_arguments(
        {"x-dequeue-interval-ms": 10, "x-discard-mark": 100, "x-discard-below-priority": 2}
    )
    policy = definition_arguments(
        {
            "max-unacked": 5,
            "dequeue-interval-ms": 1000,
            "dequeue-window": "01:00-05:00",
            "discard-mark": 1,
            "discard-below-priority": 9,
        }
    )
    config = effective_config(declared, policy, "q")
    assert (config.max_unacked, config.dequeue_window) == (5, "01:00-05:00")  # unset: the policy's
    assert (config.dequeue_interval_ms, config.discard_mark, config.discard_below_priority) == (10, 100, 2)
    with pytest.raises(InvalidCommand, match="needs"):
        ApplyPolicy("p", {"x-discard-mark": 3}, 1)  # a decoded policy keeps the pair too


def test_every_runtime_argument_has_a_policy_key() -> None:
    assert len(POLICY_KEYS) == len(set(POLICY_KEYS.values()))
    with pytest.raises(InvalidCommand):
        ApplyPolicy("p", {"x-max-priority": 3}, 1)
    with pytest.raises(InvalidCommand):
        ApplyPolicy("", {"x-max-length": 3}, 1)


def test_a_policy_limits_a_queue_and_clearing_it_restores_the_declared_configuration() -> None:
    m = make_machine(overflow="reject-publish")
    m.apply(EntryMeta(1), ApplyPolicy("limits", {"x-max-length": 2, "x-overflow": "drop-head"}, 1))
    assert m.config.max_length == 2 and m.config.rejects_publish  # the declared overflow stays
    assert m.declared_config == parse_arguments({"x-overflow": "reject-publish"})
    assert m.policy.name == "limits"
    enqueue(m, 2, count=2)
    assert isinstance(enqueue(m, 3)[0], Rejected)
    m.apply(EntryMeta(4), ApplyPolicy("", {}, 2))
    assert m.config == m.declared_config and m.policy.name == ""
    assert isinstance(enqueue(m, 5)[0], Enqueued)


def test_a_runtime_change_keeps_the_policy_and_a_policy_keeps_the_runtime_change() -> None:
    m = make_machine()
    m.apply(EntryMeta(1), ApplyPolicy("ttl", {"x-message-ttl": 1000}, 1))
    m.apply(EntryMeta(2), UpdateConfig(parse_arguments({"x-max-length": 7})))
    assert (m.config.max_length, m.config.message_ttl) == (7, 1000)
    m.apply(EntryMeta(3), ApplyPolicy("ttl", {"x-message-ttl": 50}, 2))
    assert (m.config.max_length, m.config.message_ttl) == (7, 50)
    assert m.declared_config.message_ttl is None


def test_rule_a_policy_that_ends_at_least_once_dead_lettering_drops_the_pending_dead_letters() -> None:
    m = make_machine(overflow="reject-publish", dead_letter_queue="dlq")
    m.apply(EntryMeta(1), ApplyPolicy("safe", {"x-dead-letter-strategy": "at-least-once"}, 1))
    assert m.config.dead_letters_at_least_once
    enqueue(m, 2, count=2)
    m.apply(EntryMeta(3), Checkout("c", prefetch=2))
    m.apply(EntryMeta(4), Discard((1, 2), "c"))
    assert len(m.dead_letter_ids()) == 2
    _, effects = m.apply(EntryMeta(5), ApplyPolicy("", {}, 2))
    assert m.dead_letter_ids() == [] and m.stats().dropped[STRATEGY_CHANGED] == 2
    assert effects  # the dropped ones are forgotten


def test_rule_a_policy_at_least_once_without_reject_publish_dead_letters_at_most_once() -> None:
    m = make_machine(dead_letter_queue="dlq")
    m.apply(EntryMeta(1), ApplyPolicy("p", {"x-dead-letter-strategy": "at-least-once"}, 1))
    assert m.config.dead_letter_strategy == "at-least-once" and not m.config.dead_letters_at_least_once


def test_a_snapshot_keeps_the_policy_in_version_7_once_one_was_applied() -> None:
    m = make_machine(max_length=10, overflow="reject-publish", dead_letter_queue="dlq")
    assert msgpack.unpackb(next(iter(m.snapshot_chunks())))["version"] < 7
    m.apply(EntryMeta(1), ApplyPolicy("p", {"x-max-length": 3, "x-expires": 60000,
                                             "x-dead-letter-strategy": "at-least-once"}, 4))  # fmt: skip
    enqueue(m, 2, count=3)
    m.apply(EntryMeta(3), Checkout("c", prefetch=2))
    m.apply(EntryMeta(4), Discard((1,), "c"))  # a pending dead letter, one held, one ready
    chunks = list(m.snapshot_chunks())
    header = msgpack.unpackb(chunks[0])
    assert header["version"] == 7 and header["config"] == m.declared_config.to_arguments()
    restored = QueueMachine.restore(chunks)
    assert restored.policy == m.policy and restored.policy.revision == 4
    assert restored.config == m.config and restored.declared_config == m.declared_config
    assert list(restored.snapshot_chunks()) == chunks


def test_rule_a_policy_of_an_older_revision_never_replaces_a_later_ones_choice() -> None:
    """A leader whose metadata lags proposes what an older revision of the policies chose; applying it
    would undo the later choice for a while (here: leave at-least-once dead-lettering, dropping the
    pending dead letters, then trim the queue to an old limit)."""
    m = make_machine(overflow="reject-publish", dead_letter_queue="dlq")
    m.apply(EntryMeta(1), ApplyPolicy("safe", {"x-dead-letter-strategy": "at-least-once"}, 5))
    enqueue(m, 2, count=3)
    m.apply(EntryMeta(3), Checkout("c", prefetch=1))
    m.apply(EntryMeta(4), Discard((1,), "c"))
    for stale in (ApplyPolicy("", {}, 3), ApplyPolicy("old", {"x-max-length": 0}, 4)):
        m.apply(EntryMeta(5), stale)
        assert m.policy.name == "safe" and m.dead_letter_ids() == [1]
        assert m.config.dead_letters_at_least_once and m.config.max_length is None
    m.apply(EntryMeta(6), ApplyPolicy("safe", {"x-dead-letter-strategy": "at-least-once"}, 5))  # again
    assert m.dead_letter_ids() == [1]
    m.apply(EntryMeta(7), ApplyPolicy("", {}, 6))  # a later revision takes it
    assert m.policy.revision == 6 and m.dead_letter_ids() == []


def test_rule_a_policy_never_makes_a_queue_its_own_dead_letter_target() -> None:
    policy = {"x-dead-letter-queue": "dlq", "x-message-ttl": 5}
    assert effective_config(parse_arguments({}), policy, "orders").dead_letter_queue == "dlq"
    in_force = effective_config(parse_arguments({}), policy, "dlq")
    assert (in_force.dead_letter_queue, in_force.message_ttl) == (None, 5)
