"""Which policy a queue applies (`cluster.queues.policies`): patterns match anywhere in the name, as
RabbitMQ's; the highest priority wins, then the least name; a policy is checked whole before it is
proposed."""

from __future__ import annotations

import pytest

from cluster.queues.policies import (
    PolicyError,
    applied_policy,
    checked_policy,
    matching_policy,
    policy_in_force,
)
from metadata_state.records import PolicyRecord
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
    assert applied_policy([LIMITS], "orders.eu") == AppliedPolicy("limits", {"x-max-length": 5})
    assert applied_policy([LIMITS], "audit") is NO_POLICY
    unknown_key = PolicyRecord("later", ".*", {"from-a-later-version": 1})
    assert applied_policy([unknown_key], "audit") is None
    name, in_force = policy_in_force({"x-max-length": 3}, [LIMITS], "orders.eu")
    assert name == "limits"
    assert in_force.max_length == 3  # the stricter


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
