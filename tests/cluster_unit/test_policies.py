"""Which policy a queue applies (`cluster.queues.policies`): patterns match anywhere in the name, as
RabbitMQ's; the highest priority wins, then the least name; a policy is checked whole before it is
proposed."""

from __future__ import annotations

import pytest

from cluster.queues.policies import (
    PolicyError,
    applied_names,
    applied_policy,
    checked_policy,
    matching_policy,
    policy_in_force,
)
from metadata_state.records import PolicyRecord, PolicySet
from queue_state.policy import NO_POLICY, AppliedPolicy

LIMITS = PolicyRecord("limits", r"^orders\.", {"max-length": 5})
ALL = PolicyRecord("all", ".", {"message-ttl": 1000}, priority=-1)
STRICT = PolicyRecord("strict", "eu", {"max-length": 1}, priority=3)
TIED = PolicyRecord("also-strict", "eu$", {"max-length": 2}, priority=3)


def test_rule_the_highest_priority_then_the_least_name_applies() -> None:
    policies = [LIMITS, ALL, STRICT]
    assert matching_policy(policies, "orders.us") == LIMITS
    assert matching_policy(policies, "audit") == ALL  # a pattern matches anywhere in the name
    assert matching_policy(policies, "orders.eu") == STRICT
    assert matching_policy([*policies, TIED], "orders.eu") == TIED  # "also-strict" sorts first
    assert matching_policy([LIMITS], "my-orders.x") is None


def test_a_queue_applies_the_matching_definition_as_arguments() -> None:
    assert applied_policy(PolicySet((LIMITS,)), "orders.eu") == AppliedPolicy("limits", {"x-max-length": 5})
    assert applied_policy(PolicySet((LIMITS,)), "audit") is NO_POLICY
    unknown_key = PolicyRecord("later", ".*", {"from-a-later-version": 1})
    assert applied_policy(PolicySet((unknown_key,)), "audit") is None
    name, operator, in_force = policy_in_force({"x-max-length": 3}, PolicySet((LIMITS,)), "orders.eu")
    assert (name, operator) == ("limits", "")
    assert in_force.max_length == 3  # the stricter


CAP = PolicyRecord("cap", ".", {"max-length": 4, "delivery-limit": 10, "message-ttl": 60000})


@pytest.mark.parametrize(
    ("declared", "policy", "expected"),
    [
        ({}, {}, {"x-max-length": 4, "x-delivery-limit": 10, "x-message-ttl": 60000}),
        ({"x-max-length": 9, "x-delivery-limit": -1}, {}, {"x-max-length": 4, "x-delivery-limit": 10}),
        (
            {"x-max-length": 2},
            {"max-length": 3, "delivery-limit": 5},
            {"x-max-length": 2, "x-delivery-limit": 5},
        ),
        (
            {},
            {"max-length": 100, "message-ttl": 1000, "overflow": "reject-publish"},
            {"x-max-length": 4, "x-message-ttl": 1000, "x-overflow": "reject-publish"},
        ),
    ],
)
def test_rule_an_operator_policy_s_limits_apply_over_the_queue_s_and_its_policy_s_the_smallest_wins(
    declared: dict[str, int], policy: dict[str, object], expected: dict[str, object]
) -> None:
    policies = PolicySet((PolicyRecord("user", ".", policy),) if policy else (), (CAP,))
    name, operator, in_force = policy_in_force(declared, policies, "orders.eu")
    assert (name, operator) == ("user" if policy else "", "cap")
    arguments = in_force.to_arguments()
    assert {argument: arguments.get(argument) for argument in expected} == expected
    applied = applied_policy(policies, "orders.eu")
    assert applied is not None and applied_names(applied.name) == (name, "cap")


def test_an_operator_policy_sets_limits_only() -> None:
    assert checked_policy("cap", ".", {"max-unacked": 5}, 0, operator=True).definition == {"max-unacked": 5}
    with pytest.raises(PolicyError, match="not an operator policy key"):
        checked_policy("cap", ".", {"dead-letter-queue": "dlq"}, 0, operator=True)


@pytest.mark.parametrize(
    ("name", "pattern", "definition", "priority"),
    [
        ("", ".*", {"max-length": 1}, 0),
        ("a/b", ".*", {"max-length": 1}, 0),
        ("p", "", {"max-length": 1}, 0),
        ("p", "a\\", {"max-length": 1}, 0),
        ("p", ".*", {"max-length": "1"}, 0),
        ("p", ".*", {"max-length": 1}, True),
        ("p", ".*", {"max-length": 1}, 2**63),
    ],
)
def test_a_policy_that_cannot_be_is_refused(
    name: str, pattern: str, definition: object, priority: object
) -> None:
    with pytest.raises(PolicyError):
        checked_policy(name, pattern, definition, priority)


def test_a_good_policy_is_its_record() -> None:
    assert checked_policy("limits", r"^orders\.", {"max-length": 5}, 0) == LIMITS
