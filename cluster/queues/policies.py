"""Policies (`metadata_state.records.PolicyRecord`, replicated in the metadata group): checking one
before it is proposed, and which one a queue applies.

As in RabbitMQ, a policy's pattern is a regular expression matched anywhere in a queue's name (`^orders\\.`
for a prefix, `^dlq$` for one queue), here run by RE2, linear in the name. A queue applies the matching
policy of the highest priority, of several with that priority the one whose name sorts first, and none
when no pattern matches. What it applies is the policy's definition as queue arguments
(`queue_state.policy`), which the queue's leader puts into the queue's log (`ApplyPolicy`) whenever
the metadata's choice differs from the queue's.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

from cluster.security.users import UserError, check_pattern, compiled_pattern
from metadata_state.records import PolicyRecord
from queue_state.arguments import INT64_MAX, ArgumentError, QueueConfig, parse_arguments
from queue_state.command_codec import arguments_version
from queue_state.policy import NO_POLICY, AppliedPolicy, definition_arguments, effective_config

log = logging.getLogger(__name__)

POLICY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@\-]{0,127}")  # full-matched


class PolicyError(ValueError):
    """A policy's name, pattern, priority or definition is not acceptable."""


def checked_policy(name: object, pattern: object, definition: object, priority: object) -> PolicyRecord:
    """The policy these make, or `PolicyError`."""
    if not isinstance(name, str) or not POLICY_NAME.fullmatch(name):
        raise PolicyError("policy names are 1-128 characters of letters, digits, '.', '_', ':', '@' or '-'")
    if not isinstance(pattern, str) or not pattern:
        raise PolicyError("pattern must be a non-empty regular expression")
    try:
        check_pattern("pattern", pattern)
        definition_arguments(definition)
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
    """The policy queue `queue` applies: of those whose pattern matches its name, the highest priority,
    then the least name; None when none matches."""
    matching = [p for p in policies if (compiled := compiled_pattern(p.pattern)) and compiled.search(queue)]
    return min(matching, key=lambda p: (-p.priority, p.name), default=None)


def applied_policy(policies: Iterable[PolicyRecord], queue: str) -> AppliedPolicy | None:
    """What queue `queue` applies of the policies: the matching one's name and arguments, or NO_POLICY;
    None when the matching one names what this node does not read (set through a node of a later
    version): the queue keeps the policy it applies."""
    policy = matching_policy(policies, queue)
    if policy is None:
        return NO_POLICY
    try:
        return AppliedPolicy(policy.name, definition_arguments(policy.definition))
    except ArgumentError as exc:  # checked when set; a node of a later version may know more keys
        log.warning("policy %s is not applied here: %s", policy.name, exc)
        return None


def policy_in_force(
    arguments: Mapping[str, Any], policies: Iterable[PolicyRecord], queue: str
) -> tuple[str, QueueConfig]:
    """The name of the policy queue `queue` declared with `arguments` applies ("" for none) and its
    configuration in force, as the metadata's policies make them (what its machine reaches once its
    leader applied them)."""
    chosen = applied_policy(policies, queue) or NO_POLICY
    return chosen.name, effective_config(parse_arguments(dict(arguments)), chosen.arguments, queue)
