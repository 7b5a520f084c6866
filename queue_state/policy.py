"""Policies as a queue sees them: a definition's keys, and the configuration a policy makes of the
declared one (RabbitMQ's rule).

A policy's definition names runtime arguments without their `x-` prefix, as RabbitMQ's policy keys do
(`max-length`, `delivery-limit`, `target-group-size` for `x-quorum-target-group-size`, ...). Where a
queue declared an argument and its policy sets it too, the declared value wins, except for the limits
(`max-length`, `max-length-bytes`, `message-ttl`, `expires`, `delivery-limit`, `max-unacked`), where the
stricter wins; a delivery limit of -1 is no limit, so any other is stricter. `discard-mark` and
`discard-below-priority` go together in a definition, as in a declare. Dead letters go one way, to a
queue (`dead-letter-queue`) or through an exchange (`dead-letter-exchange`, `dead-letter-routing-key`):
a definition gives at most one, and a queue that declared one way keeps it whole, whatever way its
policy gives.

An operator policy (RabbitMQ's `operator_policy`, set by administrators) sets only limits, and applies
over the queue's own arguments and its policy alike: the smallest of the three wins
(`with_operator_limits`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from queue_state.arguments import (
    DEAD_LETTER_WAYS,
    DISCARD_ARGUMENTS,
    RUNTIME_ARGUMENTS,
    ArgumentError,
    QueueConfig,
    check_argument,
    check_discard_pair,
    check_one_dead_letter_way,
    config_field,
)

POLICY_KEYS: dict[str, str] = {
    "dead-letter-queue": "x-dead-letter-queue",
    "dead-letter-strategy": "x-dead-letter-strategy",
    "max-length": "x-max-length",
    "max-length-bytes": "x-max-length-bytes",
    "overflow": "x-overflow",
    "delivery-limit": "x-delivery-limit",
    "message-ttl": "x-message-ttl",
    "expires": "x-expires",
    "lease-period": "x-lease-period",
    "consumer-timeout": "x-consumer-timeout",
    "delayed-retry-type": "x-delayed-retry-type",
    "delayed-retry-min": "x-delayed-retry-min",
    "delayed-retry-max": "x-delayed-retry-max",
    "target-group-size": "x-quorum-target-group-size",
    "max-unacked": "x-max-unacked",
    "discard-mark": "x-discard-mark",
    "discard-below-priority": "x-discard-below-priority",
    "dequeue-interval-ms": "x-dequeue-interval-ms",
    "dequeue-window": "x-dequeue-window",
    "dedupe-window": "x-dedupe-window",
    "dedupe-max": "x-dedupe-max",
    "dead-letter-exchange": "x-dead-letter-exchange",
    "dead-letter-routing-key": "x-dead-letter-routing-key",
}
"""A policy definition's keys, each with the queue argument it sets: every runtime argument."""
assert set(POLICY_KEYS.values()) == RUNTIME_ARGUMENTS
_DISCARD_KEYS = tuple(
    key for argument in DISCARD_ARGUMENTS for key, a in POLICY_KEYS.items() if a == argument
)
_DEAD_LETTER_WAY_KEYS = tuple(
    key for argument in DEAD_LETTER_WAYS for key, a in POLICY_KEYS.items() if a == argument
)
_EXCHANGE_WAY = ("x-dead-letter-exchange", "x-dead-letter-routing-key")

_STRICTER_WINS = frozenset(
    {"x-max-length", "x-max-length-bytes", "x-message-ttl", "x-expires", "x-delivery-limit", "x-max-unacked"}
)
OPERATOR_POLICY_KEYS = tuple(
    sorted(key for key, argument in POLICY_KEYS.items() if argument in _STRICTER_WINS)
)
"""The keys an operator policy may set: the limits, where the stricter value wins."""


@dataclass(frozen=True, slots=True)
class AppliedPolicy:
    """The policy a queue applies: its name ("" for none), its definition as queue arguments, and the
    revision of the metadata's policies that chose it (0: none ever applied)."""

    name: str = ""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    revision: int = 0


NO_POLICY = AppliedPolicy()


def definition_arguments(definition: object) -> dict[str, Any]:
    """The queue arguments of a policy definition, or `ArgumentError` naming the first key that is not a
    policy key or has a value its argument does not take."""
    if not isinstance(definition, dict) or not definition:
        raise ArgumentError("definition", "must be a non-empty object of policy keys")
    arguments = {}
    for key in sorted(definition, key=str):
        argument = POLICY_KEYS.get(key) if isinstance(key, str) else None
        if argument is None:
            raise ArgumentError(str(key), f"not a policy key; known: {', '.join(sorted(POLICY_KEYS))}")
        try:
            check_argument(argument, definition[key])
        except ArgumentError as exc:
            raise ArgumentError(key, exc.reason) from exc
        arguments[argument] = definition[key]
    check_discard_pair(definition, _DISCARD_KEYS)
    check_one_dead_letter_way(definition, _DEAD_LETTER_WAY_KEYS)
    return arguments


def operator_definition_arguments(definition: object) -> dict[str, Any]:
    """As `definition_arguments`, for an operator policy, whose keys are the limits only
    (`OPERATOR_POLICY_KEYS`, RabbitMQ's operator policies)."""
    arguments = definition_arguments(definition)
    for argument in arguments:
        if argument not in _STRICTER_WINS:
            key = next(key for key, a in POLICY_KEYS.items() if a == argument)
            raise ArgumentError(key, f"not an operator policy key; known: {', '.join(OPERATOR_POLICY_KEYS)}")
    return arguments


def with_operator_limits(policy: Mapping[str, Any], operator: Mapping[str, Any]) -> dict[str, Any]:
    """A policy's arguments with an operator policy's limits over them: of a limit both set, the
    stricter; one only the operator policy sets, its. `effective_config` then takes the stricter of that
    and the queue's own, so the smallest of the three applies."""
    merged = dict(policy)
    for argument, value in operator.items():
        merged[argument] = value if argument not in merged else _stricter(merged[argument], value)
    return merged


def check_policy_arguments(arguments: object) -> None:
    """Raise `ArgumentError` unless `arguments` are runtime queue arguments with values they take."""
    if not isinstance(arguments, dict):
        raise ArgumentError("arguments", "must be a map")
    for argument, value in arguments.items():
        if argument not in RUNTIME_ARGUMENTS:
            raise ArgumentError(str(argument), "not a runtime argument a policy may set")
        check_argument(argument, value)
    check_discard_pair(arguments)
    check_one_dead_letter_way(arguments)


def names_itself(target: str, queue: str) -> bool:
    """Whether dead-letter target `target`, a queue's name as `queue`'s own arguments give it (within its
    vhost), names `queue`, the cluster's name of it (`vhost/name` in a vhost other than `/`: decision
    0029; a queue's name holds no `/`)."""
    return queue == target or queue.endswith("/" + target)


def effective_config(declared: QueueConfig, policy: Mapping[str, Any], queue: str) -> QueueConfig:
    """`declared` overlaid by a policy's arguments for queue `queue`: each argument the queue leaves unset
    takes the policy's value; of a limit set by both, the stricter applies; any other declared value
    stays. A policy's dead-letter target naming the queue itself is left out (a dead-letter queue a
    broad pattern matches would dead-letter into itself, for ever), and so is its way of dead-lettering
    when the queue declared the other one."""
    changes = {}
    for argument, value in policy.items():
        if argument == "x-dead-letter-queue" and names_itself(value, queue):
            continue
        if _other_dead_letter_way(declared, argument):
            continue
        name = config_field(argument)
        own = getattr(declared, name)
        if own is None:
            changes[name] = value
        elif argument in _STRICTER_WINS:
            changes[name] = _stricter(own, value)
    return replace(declared, **changes) if changes else declared


def _other_dead_letter_way(declared: QueueConfig, argument: str) -> bool:
    """Whether a policy's `argument` names a way of dead-lettering other than the one `declared` names."""
    if argument == "x-dead-letter-queue":
        return declared.dead_letter_exchange is not None
    return argument in _EXCHANGE_WAY and declared.dead_letter_queue is not None


def _stricter(own: int, policy: int) -> int:
    """The lower of two limits, where a negative one (a delivery limit of -1) is none."""
    if own < 0:
        return policy
    if policy < 0:
        return own
    return min(own, policy)
