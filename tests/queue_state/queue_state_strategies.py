"""Hypothesis strategies for queue configurations, commands and sequences of (entry meta, command)."""

from __future__ import annotations

from hypothesis import strategies as st

from queue_state.arguments import QueueConfig, parse_arguments
from queue_state.command_codec import arguments_version
from queue_state.commands import (
    ApplyPolicy,
    Cancel,
    Checkout,
    Command,
    ConsumerDown,
    Discard,
    DlxCheckout,
    DlxSettle,
    DurableCheckout,
    DurableSettle,
    EndRedrive,
    Enqueue,
    EntryMeta,
    Get,
    NewMessage,
    Purge,
    RedriveCheckout,
    RedriveSettle,
    Return,
    Seal,
    Settle,
    StartRedrive,
    Tick,
    Touch,
    UpdateConfig,
)
from queue_state.redrive import ENDED_STATES

NAME_POOL = ("a", "b", "c", "h")
NAMES = st.sampled_from(NAME_POOL)
DURABLE_POOL = ("d1", "d2", "a")  # "a" may also be an ordinary consumer or get holder: names collide
DURABLE_NAMES = st.sampled_from(DURABLE_POOL)
TIMES = st.integers(min_value=0, max_value=2_000)
IDS = st.tuples(*[st.integers(min_value=1, max_value=40)] * 2) | st.tuples(st.integers(1, 40))


WINDOWS = st.sampled_from(["23:00-00:01", "01:00-02:00"])
"""Dequeue windows open, and closed, at every time the tests use (the first minutes of the epoch)."""
TASKS = st.sampled_from(["t1", "t2"])
SERIALS = st.integers(1, 3)
REDRIVE_CONSUMERS = st.sampled_from(["redrive:t1", "redrive:t2"])
POLICY_ARGUMENTS = st.fixed_dictionaries(
    {},
    optional={
        "x-max-length": st.integers(0, 8),
        "x-overflow": st.sampled_from(["drop-head", "reject-publish"]),
        "x-delivery-limit": st.integers(-1, 3),
        "x-dead-letter-queue": st.sampled_from(["dlq", "q"]),
        "x-dead-letter-strategy": st.sampled_from(["at-most-once", "at-least-once"]),
        "x-message-ttl": st.integers(0, 300),
        "x-lease-period": st.integers(1, 300),
        "x-max-unacked": st.integers(1, 4),
        "x-dequeue-interval-ms": st.integers(1, 100),
        "x-dequeue-window": WINDOWS,
        "x-dead-letter-exchange": st.sampled_from(["dlx", ""]),
        "x-dead-letter-routing-key": st.sampled_from(["dead", "q"]),
    },
).filter(lambda arguments: not {"x-dead-letter-queue", "x-dead-letter-exchange"} <= arguments.keys())


@st.composite
def configs(draw: st.DrawFn) -> QueueConfig:
    """Queue configurations that exercise limits, TTLs, leases, dead-lettering (to a queue or through an
    exchange), SAC, the backlog controls, deduplication windows and message groups."""
    overflow = draw(st.sampled_from([None, "drop-head", "reject-publish"]))
    discard_mark = draw(st.none() | st.integers(0, 6))
    dead_letters = draw(st.sampled_from([None, "queue", "exchange"]))
    arguments = {
        "x-max-length": draw(st.none() | st.integers(0, 8)),
        "x-max-length-bytes": draw(st.none() | st.integers(0, 200)),
        "x-overflow": overflow,
        "x-delivery-limit": draw(st.none() | st.integers(-1, 3)),
        "x-dead-letter-queue": "dlq" if dead_letters == "queue" else None,
        "x-dead-letter-exchange": draw(st.sampled_from(["dlx", ""])) if dead_letters == "exchange" else None,
        "x-dead-letter-routing-key": draw(st.none() | st.just("dead"))
        if dead_letters == "exchange"
        else None,
        "x-dead-letter-strategy": "at-least-once"
        if overflow == "reject-publish" and draw(st.booleans())
        else None,
        "x-message-ttl": draw(st.none() | st.integers(0, 300)),
        "x-expires": draw(st.none() | st.integers(1, 2_000)),
        "x-single-active-consumer": draw(st.none() | st.booleans()),
        "x-lease-period": draw(st.none() | st.integers(1, 300)),
        "x-consumer-timeout": draw(st.none() | st.integers(1, 300)),
        "x-delayed-retry-type": draw(st.none() | st.sampled_from(["disabled", "all", "failed", "returned"])),
        "x-delayed-retry-min": draw(st.none() | st.integers(0, 100)),
        "x-delayed-retry-max": draw(st.none() | st.integers(0, 400)),
        "x-max-priority": draw(st.none() | st.integers(0, 2)),
        "x-max-unacked": draw(st.none() | st.integers(1, 4)),
        "x-discard-mark": discard_mark,
        "x-discard-below-priority": None if discard_mark is None else draw(st.integers(0, 3)),
        "x-dequeue-interval-ms": draw(st.none() | st.integers(1, 100)),
        "x-dequeue-window": draw(st.none() | WINDOWS),
        "x-dedupe-window": draw(st.none() | st.integers(1, 200)),
        "x-dedupe-max": draw(st.none() | st.integers(1, 4)),
        "x-message-groups": draw(st.none() | st.booleans()),
    }
    return parse_arguments({k: v for k, v in arguments.items() if v is not None})


new_messages = st.builds(
    NewMessage,
    st.integers(0, 50),
    st.none() | st.integers(0, 300),
    st.none() | st.integers(1, 200),
    st.sampled_from([0, 0, 0, 1, 2, 3, 255]),
    st.none() | st.sampled_from(["a", "b", "c"]),
    st.none() | st.sampled_from(["g1", "g2", "g3"]),
)

commands = st.one_of(
    st.builds(
        Enqueue,
        st.lists(new_messages, min_size=1, max_size=4).map(tuple),
        st.none() | st.just("p"),
    ).flatmap(lambda e: st.just(e) if e.publisher is None else _with_seq(e)),
    st.builds(Checkout, NAMES, st.integers(1, 3), st.integers(0, 2)),
    st.builds(Checkout, NAMES, st.integers(1, 3), st.integers(0, 2), auto_ack=st.just(True)),
    st.builds(
        Checkout, NAMES, st.integers(1, 3), st.integers(0, 2), st.none(), st.integers(0, 500)
    ),  # readers
    st.builds(Cancel, NAMES, st.booleans()),
    st.builds(ConsumerDown, NAMES),
    st.builds(Settle, IDS, st.none() | NAMES),
    st.builds(Return, IDS, st.none() | NAMES, st.booleans(), st.none() | st.integers(0, 200)),
    st.builds(Discard, IDS, st.none() | NAMES, st.none() | st.sampled_from(["bad", "ünïcode ✓", ""])),
    st.builds(Touch, IDS, st.none() | NAMES),
    st.builds(Get, NAMES, st.integers(1, 3), st.booleans()),
    st.builds(Purge),
    st.builds(Tick),
    st.builds(UpdateConfig, configs()),
    st.builds(DlxCheckout, st.sampled_from(["w1", "w2"]), st.integers(1, 3)),
    st.builds(DlxSettle, IDS),
    st.builds(
        DurableCheckout,
        DURABLE_NAMES,
        st.integers(0, 4),
        st.none() | st.integers(0, 500),
        st.none() | st.integers(1, 100),
    ),
    st.builds(DurableSettle, DURABLE_NAMES, st.integers(0, 12)),
    st.builds(Seal, st.booleans(), st.booleans()),
    st.builds(ApplyPolicy, st.just(""), st.just({}), st.integers(0, 4)),
    st.builds(ApplyPolicy, st.sampled_from(["p1", "p2"]), POLICY_ARGUMENTS, st.integers(0, 4)),
    st.builds(
        StartRedrive,
        TASKS,
        st.none() | st.sampled_from(["src", "q"]),
        st.none() | TIMES,
        st.none() | TIMES,
        st.none() | st.integers(1, 10),
    ),
    st.builds(RedriveCheckout, TASKS, SERIALS, st.integers(0, 4)),
    st.builds(RedriveSettle, TASKS, SERIALS, st.integers(0, 12)),
    st.builds(EndRedrive, TASKS, SERIALS, st.sampled_from(ENDED_STATES), st.none() | st.just("why")),
    st.builds(DurableSettle, REDRIVE_CONSUMERS, st.integers(0, 12)),
    st.builds(DurableCheckout, REDRIVE_CONSUMERS, st.integers(0, 4)),
    st.builds(Cancel, REDRIVE_CONSUMERS, st.booleans()),
)


def _with_seq(enqueue: Enqueue) -> st.SearchStrategy[Enqueue]:
    return st.integers(0, 6).map(lambda seq: Enqueue(enqueue.messages, enqueue.publisher, seq))


metas = st.builds(EntryMeta, TIMES)
command_lists = st.lists(st.tuples(metas, commands), max_size=60)


_ADDED_IN_7_OR_LATER = (ApplyPolicy, StartRedrive, RedriveCheckout, RedriveSettle, EndRedrive)
_BACKLOG_CONTROLS = ("max_unacked", "discard_mark", "dequeue_interval_ms", "dequeue_window")


def _written_before_version_13(command: Command) -> bool:
    if isinstance(command, UpdateConfig):
        return command.config.message_groups is None
    if isinstance(command, Enqueue):
        return all(message.group is None for message in command.messages)
    return True


def _written_before_version_12(command: Command) -> bool:
    if isinstance(command, UpdateConfig):
        exchange = command.config.dead_letter_exchange, command.config.dead_letter_routing_key
        return exchange == (None, None) and _written_before_version_13(command)
    if isinstance(command, ApplyPolicy):
        return arguments_version(command.arguments) < 12
    return _written_before_version_13(command)


def _written_before_version_11(command: Command) -> bool:
    if isinstance(command, UpdateConfig):
        windowless = command.config.dedupe_window is None and command.config.dedupe_max is None
        return windowless and _written_before_version_12(command)
    if isinstance(command, Enqueue):
        no_ids = all(message.dedupe_id is None for message in command.messages)
        return no_ids and _written_before_version_12(command)
    return not isinstance(command, ApplyPolicy) or arguments_version(command.arguments) < 11


def _written_before_version_10(command: Command) -> bool:
    if isinstance(command, UpdateConfig):
        backlog_controls = (getattr(command.config, name) for name in _BACKLOG_CONTROLS)
        return all(value is None for value in backlog_controls) and _written_before_version_11(command)
    if isinstance(command, ApplyPolicy):
        return arguments_version(command.arguments) < 10
    return _written_before_version_11(command)


def _written_before_version_6(command: Command) -> bool:
    if isinstance(command, _ADDED_IN_7_OR_LATER):
        return False
    if isinstance(command, Checkout) and command.auto_ack:  # version 9
        return False
    if isinstance(command, UpdateConfig):
        return command.config.max_priority is None and _written_before_version_10(command)
    if isinstance(command, Enqueue):
        return not any(message.priority for message in command.messages) and _written_before_version_10(
            command
        )
    return True


def _written_before_version_5(command: Command) -> bool:
    if isinstance(command, UpdateConfig):
        config = command.config
        retry = (config.delayed_retry_type, config.delayed_retry_min, config.delayed_retry_max)
        return retry == (None,) * 3 and _written_before_version_6(command)
    if isinstance(command, Enqueue):
        return not any(message.delay_ms for message in command.messages) and _written_before_version_6(
            command
        )
    delayed_return = isinstance(command, Return) and command.delay_ms is not None
    return not delayed_return and _written_before_version_6(command)


def _written_before_version_4(command: Command) -> bool:
    if isinstance(command, UpdateConfig) and command.config.consumer_timeout is not None:
        return False
    return not isinstance(command, Touch) and _written_before_version_5(command)


def _written_before_version_3(command: Command) -> bool:
    if isinstance(command, Return | Cancel):
        return command.failed and _written_before_version_4(command)
    discard_reason = isinstance(command, Discard) and command.reason is not None
    return not discard_reason and _written_before_version_4(command)


def _written_before_version_2(command: Command) -> bool:
    reader = isinstance(command, Checkout) and command.since_ms is not None
    return not reader and _written_before_version_3(command)


commands_before_version_13 = commands.filter(_written_before_version_13)
"""Commands version 12 reads: no message groups (a configuration's, a message's group)."""
commands_before_version_12 = commands.filter(_written_before_version_12)
"""Commands version 11 reads: no dead-lettering through an exchange (a configuration's or a policy's)."""
commands_before_version_11 = commands.filter(_written_before_version_11)
"""Commands version 10 reads: no deduplication window (a configuration's, a policy's, a message's id)."""
commands_before_version_10 = commands.filter(_written_before_version_10)
"""Commands version 9 reads: no backlog control (a configuration's or a policy's)."""
commands_before_version_6 = commands.filter(_written_before_version_6)
"""Commands version 5 reads: no priority (a message's, the x-max-priority argument)."""
commands_before_version_5 = commands.filter(_written_before_version_5)
"""Commands version 4 reads: no delay (a message's, a nack's, the delayed retry arguments)."""
commands_before_version_4 = commands.filter(_written_before_version_4)
"""Commands version 3 reads: no touch, no consumer timeout argument (queue operations version 4)."""
commands_before_version_3 = commands.filter(_written_before_version_3)
"""Commands version 2 reads: no field added with queue operations version 3 (a return's or cancel's
`failed` False, a discard's `reason`) or later (a touch, a consumer timeout argument)."""
commands_before_version_2 = commands.filter(_written_before_version_2)
"""Commands every form reads: no field added with queue operations version 2 (a reader's `since_ms`)
or later."""
