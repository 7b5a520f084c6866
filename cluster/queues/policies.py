"""Policies (`metadata_state.records.PolicyRecord`, replicated in the metadata group): checking one
before it is proposed, and which one a queue applies.

As in RabbitMQ, a policy's pattern is a regular expression matched anywhere in a queue's name (`^orders\\.`
for a prefix, `^dlq$` for one queue), here run by RE2, linear in the name. A queue applies the matching
policy of the highest priority, of several with that priority the one whose name sorts first, and none
when no pattern matches. What it applies is the policy's definition as queue arguments
(`queue_state.policy`), which the queue's leader puts into the queue's log (`ApplyPolicy`) whenever
the metadata's choice differs from the queue's. A matching operator policy (set by administrators,
limits only) applies over both: the smallest of the queue's own limit, its policy's and the operator
policy's is in force.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

from cluster.security.users import UserError, check_pattern, compiled_pattern
from metadata_state.records import PolicyRecord, PolicySet
from metadata_state.vhost_names import split
from queue_state.arguments import INT64_MAX, ArgumentError, QueueConfig, parse_arguments
from queue_state.command_codec import arguments_version
from queue_state.policy import (
    NO_POLICY,
    OPERATOR_POLICY_KEYS,
    AppliedPolicy,
    definition_arguments,
    effective_config,
    operator_definition_arguments,
    with_operator_limits,
)

__all__ = [
    "OPERATOR_POLICY_KEYS",
    "PolicyError",
    "applied_name",
    "applied_names",
    "applied_policy",
    "checked_policy",
    "matching_policy",
    "policy_in_force",
    "policy_version",
]

log = logging.getLogger(__name__)

POLICY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@\-]{0,127}")  # full-matched


class PolicyError(ValueError):
    """A policy's name, pattern, priority or definition is not acceptable."""


def checked_policy(
    name: object, pattern: object, definition: object, priority: object, operator: bool = False
) -> PolicyRecord:
    """The policy these make (an operator policy's definition sets limits only), or `PolicyError`."""
    if not isinstance(name, str) or not POLICY_NAME.fullmatch(name):
        raise PolicyError("policy names are 1-128 characters of letters, digits, '.', '_', ':', '@' or '-'")
    if not isinstance(pattern, str) or not pattern:
        raise PolicyError("pattern must be a non-empty regular expression")
    try:
        check_pattern("pattern", pattern)
        (operator_definition_arguments if operator else definition_arguments)(definition)
    except UserError as exc:
        raise PolicyError(str(exc)) from exc
    except ArgumentError as exc:
        raise PolicyError(f"definition {exc.argument}: {exc.reason}") from exc
    if type(priority) is not int or not -INT64_MAX <= priority <= INT64_MAX:
        raise PolicyError(f"priority must be an integer, got {priority!r}")
    assert isinstance(definition, dict)  # definition_arguments took it
    return PolicyRecord(name, pattern, definition, priority)


def policy_version(policy: PolicyRecord) -> int:
    """The first queue operations version whose nodes all read checked `policy`'s arguments: it is set
    only once every node reads that version, as a queue declared with them is."""
    return arguments_version(definition_arguments(policy.definition))


def matching_policy(policies: Iterable[PolicyRecord], queue: str) -> PolicyRecord | None:
    """The policy queue `queue` (a `qualified` name) applies: of those of its vhost whose pattern matches
    its name in it, the highest priority, then the least name; None when none matches."""
    vhost, name = split(queue)
    matching = [
        p
        for p in policies
        if p.vhost == vhost and (compiled := compiled_pattern(p.pattern)) and compiled.search(name)
    ]
    return min(matching, key=lambda p: (-p.priority, p.name), default=None)


def applied_policy(policies: PolicySet, queue: str) -> AppliedPolicy | None:
    """What queue `queue` applies of the policies: the matching policy's arguments with the matching
    operator policy's limits over them (`with_operator_limits`), named after both (`applied_name`), or
    NO_POLICY when neither matches; None when one names what this node does not read (set through a
    node of a later version): the queue keeps the policy it applies."""
    return _applied(matching_policy(policies.user, queue), matching_policy(policies.operator, queue), queue)


def _applied(policy: PolicyRecord | None, operator: PolicyRecord | None, queue: str) -> AppliedPolicy | None:
    """`applied_policy` of the policy and the operator policy that match queue `queue`."""
    if policy is None and operator is None:
        return NO_POLICY
    try:
        arguments = {} if policy is None else definition_arguments(policy.definition)
        if operator is not None:
            arguments = with_operator_limits(arguments, definition_arguments(operator.definition))
    except ArgumentError as exc:  # checked when set; a node of a later version may know more keys
        log.warning("queue %s applies no new policy here: %s", queue, exc)
        return None
    return AppliedPolicy(applied_name(policy, operator), arguments)


def applied_name(policy: PolicyRecord | None, operator: PolicyRecord | None) -> str:
    """The name a queue's machine records for what it applies: the policy's, then `+` and the operator
    policy's when one applies (no policy name holds a `+`)."""
    name = "" if policy is None else policy.name
    return name if operator is None else f"{name}+{operator.name}"


def applied_names(name: str) -> tuple[str, str]:
    """The policy's and the operator policy's names of an `applied_name` ("" for none)."""
    policy, _, operator = name.partition("+")
    return policy, operator


def policy_in_force(
    arguments: Mapping[str, Any], policies: PolicySet, queue: str
) -> tuple[str, str, QueueConfig]:
    """The names of the policy and the operator policy queue `queue` declared with `arguments` applies
    ("" for none) and its configuration in force, as the metadata's policies make them (what its machine
    reaches once its leader applied them)."""
    policy = matching_policy(policies.user, queue)
    operator = matching_policy(policies.operator, queue)
    chosen = _applied(policy, operator, queue) or NO_POLICY
    in_force = effective_config(parse_arguments(dict(arguments)), chosen.arguments, queue)
    return "" if policy is None else policy.name, "" if operator is None else operator.name, in_force
