"""Declare-time queue arguments (RabbitMQ names) parsed into a validated, canonical `QueueConfig`."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

from queue_state.dequeue_window import DequeueWindow

INT64_MAX = 2**63 - 1
DEFAULT_DELIVERY_LIMIT = 20
"""The `x-delivery-limit` a queue declared without one gets (RabbitMQ 4.0's default); -1 is unlimited."""
DEFAULT_RETRY_MIN_MS = 1000
"""The first retry delay of a queue with `x-delayed-retry-type` and no `x-delayed-retry-min`."""
DEFAULT_RETRY_MAX_MS = 60000
"""The longest retry delay of a queue with `x-delayed-retry-type` and no `x-delayed-retry-max`."""
MAX_PRIORITY = 31
"""The highest message priority a queue has (RabbitMQ 4.3's 32 levels); `x-max-priority` may lower it."""
AT_LEAST_ONCE_RULE = "at-least-once dead-lettering requires x-overflow reject-publish"
DEAD_LETTER_WAYS = ("x-dead-letter-queue", "x-dead-letter-exchange")
"""The two ways to name where dead letters go, a queue or an exchange: one, or neither."""
MAX_DEDUPE_MAX = 1_000_000
"""The most message ids `x-dedupe-max` lets a queue's deduplication window hold."""
SHORT_TEXT_BYTES = 255
"""The longest AMQP short string, in bytes of UTF-8."""
DISCARD_ARGUMENTS = ("x-discard-mark", "x-discard-below-priority")
"""The discard mark and the priority below which it discards: set together, or neither."""


class ArgumentError(ValueError):
    """A queue argument is unknown or has a value it cannot take; `argument` names it."""

    def __init__(self, argument: str, reason: str) -> None:
        super().__init__(f"{argument}: {reason}")
        self.argument = argument
        self.reason = reason


@dataclass(frozen=True, slots=True)
class DeadLetterRoute:
    """Where a queue's dead letters go: through `exchange` ("" the default exchange, which routes to the
    queue the routing key names) by `routing_key`, or by each letter's own routing key when None."""

    exchange: str
    routing_key: str | None


@dataclass(frozen=True, slots=True)
class QueueConfig:
    """A quorum queue's configuration; every optional setting is `None` when unset."""

    queue_type: str = "quorum"
    initial_group_size: int | None = None
    target_group_size: int | None = None
    leader_locator: str | None = None
    max_length: int | None = None
    max_length_bytes: int | None = None
    overflow: str | None = None
    delivery_limit: int | None = None
    dead_letter_queue: str | None = None
    dead_letter_strategy: str | None = None
    message_ttl: int | None = None
    expires: int | None = None
    single_active_consumer: bool | None = None
    lease_period: int | None = None
    consumer_timeout: int | None = None
    delayed_retry_type: str | None = None
    delayed_retry_min: int | None = None
    delayed_retry_max: int | None = None
    max_priority: int | None = None
    max_unacked: int | None = None
    discard_mark: int | None = None
    discard_below_priority: int | None = None
    dequeue_interval_ms: int | None = None
    dequeue_window: str | None = None
    dedupe_window: int | None = None
    dedupe_max: int | None = None
    dead_letter_exchange: str | None = None
    dead_letter_routing_key: str | None = None
    message_groups: bool | None = None

    @property
    def top_priority(self) -> int:
        """The highest priority a message takes here (a higher one is taken as this)."""
        return MAX_PRIORITY if self.max_priority is None else self.max_priority

    @property
    def delivery_limit_in_force(self) -> int | None:
        """The delivery limit the queue applies: None without one, or with -1 (unlimited, stored as
        given so that a redeclare compares equal)."""
        limit = self.delivery_limit
        return None if limit is None or limit < 0 else limit

    def retry_delay_ms(self, failed: bool, returns: int) -> int:
        """How long a message back from its holder for the `returns`-th time (1 for the first) waits
        before it is ready again: `x-delayed-retry-min` doubled for each return before this one, capped
        at `x-delayed-retry-max`, when `x-delayed-retry-type` covers this return (`failed`, or a plain
        one); 0 when it does not."""
        kind = self.delayed_retry_type
        if kind is None or kind == "disabled" or kind == ("returned" if failed else "failed"):
            return 0
        low = DEFAULT_RETRY_MIN_MS if self.delayed_retry_min is None else self.delayed_retry_min
        high = max(low, DEFAULT_RETRY_MAX_MS if self.delayed_retry_max is None else self.delayed_retry_max)
        return min(low << min(max(returns - 1, 0), 62), high)

    @property
    def window(self) -> DequeueWindow | None:
        """The `x-dequeue-window` outside which the queue hands nothing out, if any."""
        return None if self.dequeue_window is None else DequeueWindow.parse(self.dequeue_window)

    @property
    def rejects_publish(self) -> bool:
        """True when a full queue refuses publishes instead of dropping its head."""
        return self.overflow == "reject-publish"

    @property
    def dead_letter_route(self) -> DeadLetterRoute | None:
        """Where dead letters go, None without a target: `x-dead-letter-queue` Q routes as the default
        exchange does with Q as the routing key (RabbitMQ's way to name a queue)."""
        if self.dead_letter_queue is not None:
            return DeadLetterRoute("", self.dead_letter_queue)
        if self.dead_letter_exchange is not None:
            return DeadLetterRoute(self.dead_letter_exchange, self.dead_letter_routing_key)
        return None

    @property
    def dead_letters_at_least_once(self) -> bool:
        """At-least-once dead-lettering is in force only with a target and reject-publish."""
        return (
            self.dead_letter_strategy == "at-least-once"
            and self.dead_letter_route is not None
            and self.rejects_publish
        )

    def to_arguments(self) -> dict[str, Any]:
        """The canonical argument dict: the queue type plus every set value, in a fixed order."""
        return {
            argument: getattr(self, field_name)
            for argument, (field_name, _) in _ARGUMENTS.items()
            if getattr(self, field_name) is not None
        }


def _integer(minimum: int, maximum: int = INT64_MAX) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if type(value) is not int:
            return f"must be an integer, got {type(value).__name__}"
        if value < minimum:
            return f"must be >= {minimum}, got {value}"
        if value > maximum:
            return f"must be <= {maximum}"
        return None

    return check


def _one_of(*choices: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if value not in choices or type(value) is not str:
            return f"must be one of {', '.join(choices)}, got {value!r}"
        return None

    return check


def _window(value: Any) -> str | None:
    if type(value) is not str:
        return f'must be a string "HH:MM-HH:MM", got {type(value).__name__}'
    try:
        DequeueWindow.parse(value)
    except ValueError as exc:
        return str(exc)
    return None


def _queue_name(value: Any) -> str | None:
    if type(value) is not str or not value:
        return f"must be a non-empty string, got {value!r}"
    return None


def short_text_problem(value: Any) -> str | None:
    """Why `value` is not AMQP's short string, at most SHORT_TEXT_BYTES bytes of UTF-8 (a name, a
    routing key, a group), or None when it is one."""
    if type(value) is not str:
        return f"must be a string, got {type(value).__name__}"
    try:
        size = len(value.encode())
    except UnicodeEncodeError:
        return "must be valid UTF-8 text"
    return (
        f"must be at most {SHORT_TEXT_BYTES} bytes of UTF-8, got {size}" if size > SHORT_TEXT_BYTES else None
    )


def _boolean(value: Any) -> str | None:
    if type(value) is not bool:
        return f"must be a boolean, got {type(value).__name__}"
    return None


_ARGUMENTS: dict[str, tuple[str, Callable[[Any], str | None]]] = {
    "x-queue-type": ("queue_type", _one_of("quorum")),
    "x-quorum-initial-group-size": ("initial_group_size", _integer(1)),
    "x-quorum-target-group-size": ("target_group_size", _integer(1)),
    "x-queue-leader-locator": ("leader_locator", _one_of("client-local", "balanced")),
    "x-max-length": ("max_length", _integer(0)),
    "x-max-length-bytes": ("max_length_bytes", _integer(0)),
    "x-overflow": ("overflow", _one_of("drop-head", "reject-publish")),
    "x-delivery-limit": ("delivery_limit", _integer(-1)),
    "x-dead-letter-queue": ("dead_letter_queue", _queue_name),
    "x-dead-letter-strategy": ("dead_letter_strategy", _one_of("at-most-once", "at-least-once")),
    "x-message-ttl": ("message_ttl", _integer(0)),
    "x-expires": ("expires", _integer(1)),
    "x-single-active-consumer": ("single_active_consumer", _boolean),
    "x-lease-period": ("lease_period", _integer(1)),
    "x-consumer-timeout": ("consumer_timeout", _integer(1)),
    "x-delayed-retry-type": ("delayed_retry_type", _one_of("disabled", "all", "failed", "returned")),
    "x-delayed-retry-min": ("delayed_retry_min", _integer(0)),
    "x-delayed-retry-max": ("delayed_retry_max", _integer(0)),
    "x-max-priority": ("max_priority", _integer(0, MAX_PRIORITY)),
    "x-max-unacked": ("max_unacked", _integer(1)),
    "x-discard-mark": ("discard_mark", _integer(0)),
    "x-discard-below-priority": ("discard_below_priority", _integer(0, MAX_PRIORITY)),
    "x-dequeue-interval-ms": ("dequeue_interval_ms", _integer(1)),
    "x-dequeue-window": ("dequeue_window", _window),
    "x-dedupe-window": ("dedupe_window", _integer(1)),
    "x-dedupe-max": ("dedupe_max", _integer(1, MAX_DEDUPE_MAX)),
    "x-dead-letter-exchange": ("dead_letter_exchange", short_text_problem),
    "x-dead-letter-routing-key": ("dead_letter_routing_key", short_text_problem),
    "x-message-groups": ("message_groups", _boolean),
}

RUNTIME_ARGUMENTS = frozenset(
    {
        "x-dead-letter-queue",
        "x-dead-letter-strategy",
        "x-max-length",
        "x-max-length-bytes",
        "x-overflow",
        "x-delivery-limit",
        "x-message-ttl",
        "x-expires",
        "x-lease-period",
        "x-consumer-timeout",
        "x-delayed-retry-type",
        "x-delayed-retry-min",
        "x-delayed-retry-max",
        "x-quorum-target-group-size",
        "x-max-unacked",
        "x-discard-mark",
        "x-discard-below-priority",
        "x-dequeue-interval-ms",
        "x-dequeue-window",
        "x-dedupe-window",
        "x-dedupe-max",
        "x-dead-letter-exchange",
        "x-dead-letter-routing-key",
    }
)
"""The arguments a queue may change at runtime, like a RabbitMQ policy (its leader applies a change as an
`UpdateConfig`); the others are fixed at declaration: a change needs a new queue."""


@dataclass(frozen=True, slots=True)
class QueueDefaults:
    """What a node gives a queue declared without these arguments (RabbitMQ's `rabbitmq.conf` defaults):
    applied by the node that proposes the declare and stored in the queue's arguments, so every replica
    agrees whatever its own settings, and queues declared before keep theirs. None leaves an argument
    unset (the group size and leader locator then take placement's own defaults)."""

    delivery_limit: int = DEFAULT_DELIVERY_LIMIT
    initial_group_size: int | None = None
    leader_locator: str | None = None

    def __post_init__(self) -> None:
        defaults = {
            "x-delivery-limit": self.delivery_limit,
            "x-quorum-initial-group-size": self.initial_group_size,
            "x-queue-leader-locator": self.leader_locator,
        }
        parse_arguments({name: value for name, value in defaults.items() if value is not None})

    def apply(self, config: QueueConfig) -> QueueConfig:
        """`config` with each default it leaves unset."""
        filled = {
            name: default
            for name in _DEFAULTED
            if getattr(config, name) is None and (default := getattr(self, name)) is not None
        }
        return replace(config, **filled) if filled else config


def differs_only_where_defaulted(given: QueueConfig, stored: QueueConfig) -> bool:
    """True when `stored` agrees with `given` on every argument but those `given` leaves unset that a
    node's default would fill, whatever value `stored` has there: a stored value does not say whether a
    default (this node's, another's, an older one) or the declaring client put it there."""
    return all(
        getattr(stored, field_name) == getattr(given, field_name)
        or (field_name in _DEFAULTED and getattr(given, field_name) is None)
        for field_name, _ in _ARGUMENTS.values()
    )


_DEFAULTED = ("delivery_limit", "initial_group_size", "leader_locator")
"""The `QueueConfig` fields a node's defaults fill."""


def config_field(argument: str) -> str:
    """The `QueueConfig` field of a known queue argument."""
    return _ARGUMENTS[argument][0]


def check_argument(argument: str, value: Any) -> None:
    """Raise `ArgumentError` unless `argument` is known and takes `value` (checked alone: the rule tying
    at-least-once dead-lettering to reject-publish is for a whole configuration)."""
    known = _ARGUMENTS.get(argument) if isinstance(argument, str) else None
    if known is None:
        raise ArgumentError(str(argument), "unknown argument")
    problem = known[1](value)
    if problem is not None:
        raise ArgumentError(argument, problem)


def check_discard_pair(given: Collection[str], names: Sequence[str] = DISCARD_ARGUMENTS) -> None:
    """Raise `ArgumentError` naming whichever of `names` (the discard mark's and its priority's, by their
    argument or policy key names) `given` has without the other: either one alone means nothing."""
    present = [name for name in names if name in given]
    if len(present) == 1:
        missing = next(name for name in names if name not in given)
        raise ArgumentError(present[0], f"needs {missing} as well (the mark discards below a priority)")


def check_one_dead_letter_way(given: Collection[str], names: Sequence[str] = DEAD_LETTER_WAYS) -> None:
    """Raise `ArgumentError` when `given` has both of `names` (the dead-letter queue's and exchange's, by
    their argument or policy key names): dead letters go to a queue or through an exchange."""
    if all(name in given for name in names):
        raise ArgumentError(names[1], f"cannot be given with {names[0]}: dead letters go one way")


def parse_arguments(args: object) -> QueueConfig:
    """Validate RabbitMQ-style queue arguments; raise `ArgumentError` naming the first bad one."""
    if not isinstance(args, dict):
        raise ArgumentError("arguments", f"must be an object, got {type(args).__name__}")
    values: dict[str, Any] = {}
    for argument in sorted(args, key=str):
        check_argument(argument, args[argument])
        values[config_field(argument)] = args[argument]
    check_discard_pair(args)
    check_one_dead_letter_way(args)
    if "x-dead-letter-routing-key" in args and "x-dead-letter-exchange" not in args:
        raise ArgumentError("x-dead-letter-routing-key", "needs x-dead-letter-exchange, as RabbitMQ's does")
    config = QueueConfig(**values)
    if config.dead_letter_strategy == "at-least-once" and not config.rejects_publish:
        raise ArgumentError("x-dead-letter-strategy", AT_LEAST_ONCE_RULE)
    return config
