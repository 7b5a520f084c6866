"""The wire forms of queue commands, by the version of the queue operation that carries them.

Versions 1 to 13 (`encode_command`, `decode_command`): the msgpack-ready list `[tag, {field: value}]`.
Fields travel by name and a field equal to its default is left off, so a field added later with a default
replays entries written before it (and a node that predates the field reads every command that leaves
it at its default); a field the record does not have, or a missing one without a default, is an error.
A field added with a later version (`_ADDED_IN`: Checkout's `since_ms` in 2; Return's and Cancel's
`failed` and Discard's `reason` in 3; Checkout's `auto_ack` in 9) cannot be written in an earlier one,
nor can a command added later (`Touch`, 4; `ApplyPolicy`, 7; the redrive commands, 8), an
`UpdateConfig` or `ApplyPolicy` setting an argument added later (`x-consumer-timeout`, 4; the
`x-delayed-retry-*` ones, 5; `x-max-priority`, 6; the backlog controls, 10; `x-dedupe-window` and
`x-dedupe-max`, 11; `x-dead-letter-exchange` and `x-dead-letter-routing-key`, 12; `x-message-groups`,
13), or an `Enqueue` of a message with a delay (5; Return's `delay_ms` too), a priority (6), a
`dedupe_id` (11) or a `group` (13).

Version 0 (`encode_command_v0`, `decode_command_v0`): msgpack bytes of `[tag, now_ms, values...]`, the
values positional in `_V0_FIELDS` order, with the time the entry envelope carries since version 1. It
decodes into the same record plus its `EntryMeta`, and is still written while a member of the queue's
group may run a version that reads nothing else (`cluster/replication/entry_codec.py`).

Values are the same in both: ids as a list, each `NewMessage` as `[size, expiration_ms]` (and its
`delay_ms` third when it has one or a priority, which comes fourth when it is not 0, its `dedupe_id`
fifth when it has one or a group, which comes sixth), a `QueueConfig` as its canonical arguments.
Decoding raises only `CommandDecodeError`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import MISSING, fields
from typing import Any

import msgpack

from queue_state.arguments import ArgumentError, QueueConfig, parse_arguments
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
    InvalidCommand,
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


class CommandDecodeError(ValueError):
    """Data that is not a valid encoded command."""


# Wire tags are part of the log format: append new ones, never renumber.
_TAGS: dict[type[Command], int] = {
    Enqueue: 1,
    Checkout: 2,
    Cancel: 3,
    ConsumerDown: 4,
    Settle: 5,
    Return: 6,
    Discard: 7,
    Get: 8,
    Purge: 9,
    Tick: 10,
    UpdateConfig: 11,
    DlxCheckout: 12,
    DlxSettle: 13,
    DurableCheckout: 14,
    DurableSettle: 15,
    Seal: 16,
    Touch: 17,
    ApplyPolicy: 18,
    StartRedrive: 19,
    RedriveCheckout: 20,
    EndRedrive: 21,
    RedriveSettle: 22,
}
_TYPES: dict[int, type[Command]] = {tag: kind for kind, tag in _TAGS.items()}
_FIELD_NAMES: dict[type[Command], tuple[str, ...]] = {
    kind: tuple(f.name for f in fields(kind)) for kind in _TAGS
}
_DEFAULTS: dict[type[Command], dict[str, Any]] = {
    kind: {f.name: f.default for f in fields(kind) if f.default is not MISSING} for kind in _TAGS
}
_REQUIRED: dict[type[Command], frozenset[str]] = {
    kind: frozenset(_FIELD_NAMES[kind]).difference(_DEFAULTS[kind]) for kind in _TAGS
}

# Version 0, frozen as it was written: each command's positional fields after `now_ms`, and how many of
# the last ones an older form of the command left off (DurableCheckout before since_ms and max_bytes).
_V0_FIELDS: dict[type[Command], tuple[str, ...]] = {
    Enqueue: ("messages", "publisher", "seq"),
    Checkout: ("consumer", "prefetch", "priority", "timeout_ms"),
    Cancel: ("consumer",),
    ConsumerDown: ("consumer",),
    Settle: ("ids", "consumer"),
    Return: ("ids", "consumer"),
    Discard: ("ids", "consumer"),
    Get: ("holder", "count", "auto_ack", "since_ms"),
    Purge: (),
    Tick: (),
    UpdateConfig: ("config",),
    DlxCheckout: ("worker", "prefetch"),
    DlxSettle: ("ids",),
    DurableCheckout: ("consumer", "count", "since_ms", "max_bytes"),
    DurableSettle: ("consumer", "below"),
    Seal: ("if_empty", "if_unused"),
}
_V0_SHORTER: dict[type[Command], int] = {DurableCheckout: 2}

NAMED_VERSIONS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13)
"""The operation versions whose commands travel in the named-field form."""
# The version a field of the named form was added in, when after version 1: an older node refuses it.
_ADDED_IN: dict[type[Command], dict[str, int]] = {
    Checkout: {"since_ms": 2, "auto_ack": 9},
    Return: {"failed": 3, "delay_ms": 5},
    Cancel: {"failed": 3},
    Discard: {"reason": 3},
}
POLICY_VERSION = 7
"""The version in which a queue applies policies (`ApplyPolicy`)."""
REDRIVE_VERSION = 8
"""The version with redrive tasks (`StartRedrive`, `RedriveCheckout`, `RedriveSettle`, `EndRedrive`)."""
AUTO_ACK_VERSION = 9
"""The version with auto-ack consumers (`Checkout.auto_ack`)."""
BACKLOG_VERSION = 10
"""The version with the backlog controls: the arguments `x-max-unacked`, `x-discard-mark`,
`x-discard-below-priority`, `x-dequeue-interval-ms` and `x-dequeue-window`."""
DEDUPE_VERSION = 11
"""The version with deduplication windows: a message's `dedupe_id`, the arguments `x-dedupe-window` and
`x-dedupe-max`."""
DEAD_LETTER_EXCHANGE_VERSION = 12
"""The version with dead-lettering through an exchange: the arguments `x-dead-letter-exchange` and
`x-dead-letter-routing-key`."""
MESSAGE_GROUPS_VERSION = 13
"""The version with ordered message groups: a message's `group`, the argument `x-message-groups`."""
# The version a command was added in, when after version 1 (version 0 has none of them either).
_COMMAND_ADDED_IN: dict[type[Command], int] = {
    Touch: 4,
    ApplyPolicy: POLICY_VERSION,
    StartRedrive: REDRIVE_VERSION,
    RedriveCheckout: REDRIVE_VERSION,
    RedriveSettle: REDRIVE_VERSION,
    EndRedrive: REDRIVE_VERSION,
}
# The version a queue argument was added in, when after version 0: an older node cannot parse a
# configuration that sets it.
_ARGUMENT_ADDED_IN: dict[str, int] = {
    "x-consumer-timeout": 4,
    "x-delayed-retry-type": 5,
    "x-delayed-retry-min": 5,
    "x-delayed-retry-max": 5,
    "x-max-priority": 6,
    "x-max-unacked": BACKLOG_VERSION,
    "x-discard-mark": BACKLOG_VERSION,
    "x-discard-below-priority": BACKLOG_VERSION,
    "x-dequeue-interval-ms": BACKLOG_VERSION,
    "x-dequeue-window": BACKLOG_VERSION,
    "x-dedupe-window": DEDUPE_VERSION,
    "x-dedupe-max": DEDUPE_VERSION,
    "x-dead-letter-exchange": DEAD_LETTER_EXCHANGE_VERSION,
    "x-dead-letter-routing-key": DEAD_LETTER_EXCHANGE_VERSION,
    "x-message-groups": MESSAGE_GROUPS_VERSION,
}
DELAYED_MESSAGE_VERSION = 5
"""The version in which a message to enqueue may carry a delay (`NewMessage.delay_ms`)."""
PRIORITY_MESSAGE_VERSION = 6
"""The version in which a message to enqueue may carry a priority (`NewMessage.priority`)."""


def arguments_version(arguments: dict[str, Any]) -> int:
    """The first queue operations version whose nodes all read queue `arguments` (0 for the original
    ones): a queue declared or changed to them before every node reads it would stop an older replica."""
    return max((_ARGUMENT_ADDED_IN.get(name, 0) for name in arguments), default=0)


def _content_version(cmd: Command) -> int:
    """The first version whose nodes read what `cmd` says beyond its fields' names: a command added later,
    a configuration with a later argument, a message with a priority or a delay (0: every version)."""
    if type(cmd) is UpdateConfig:
        return arguments_version(cmd.config.to_arguments())
    if type(cmd) is ApplyPolicy:
        return max(POLICY_VERSION, arguments_version(cmd.arguments))
    if type(cmd) is Enqueue:
        if any(message.group is not None for message in cmd.messages):
            return MESSAGE_GROUPS_VERSION
        if any(message.dedupe_id is not None for message in cmd.messages):
            return DEDUPE_VERSION
        if any(message.priority for message in cmd.messages):
            return PRIORITY_MESSAGE_VERSION
        if any(message.delay_ms for message in cmd.messages):
            return DELAYED_MESSAGE_VERSION
    return _COMMAND_ADDED_IN.get(type(cmd), 0)


def _is_default(kind: type[Command], name: str, value: Any) -> bool:
    defaults = _DEFAULTS[kind]
    return name in defaults and type(value) is type(defaults[name]) and value == defaults[name]


def _to_wire(value: Any) -> Any:
    if type(value) is tuple:
        return [_to_wire(item) for item in value]
    if type(value) is NewMessage:
        if value.group is not None:
            return [
                value.size,
                value.expiration_ms,
                value.delay_ms,
                value.priority,
                value.dedupe_id,
                value.group,
            ]
        if value.dedupe_id is not None:
            return [value.size, value.expiration_ms, value.delay_ms, value.priority, value.dedupe_id]
        if value.priority:
            return [value.size, value.expiration_ms, value.delay_ms, value.priority]
        if value.delay_ms:
            return [value.size, value.expiration_ms, value.delay_ms]
        return [value.size, value.expiration_ms]
    if type(value) is QueueConfig:
        return value.to_arguments()
    return value


def _from_wire(field_name: str, value: Any) -> Any:
    if field_name == "messages":
        if type(value) is not list or any(type(message) is not list for message in value):
            raise InvalidCommand(
                "messages must be a list of "
                "[size, expiration_ms(, delay_ms(, priority(, dedupe_id(, group))))]"
            )
        return tuple(NewMessage(*message) for message in value)
    if field_name == "ids":
        if type(value) is not list:
            raise InvalidCommand("ids must be a list")
        return tuple(value)
    if field_name == "config":
        return parse_arguments(value)
    return value


def encode_command(cmd: Command, version: int = NAMED_VERSIONS[-1]) -> list[Any]:
    """The named form of a command in operation `version` (of `NAMED_VERSIONS`): `[tag, {field: value}]`,
    fields at their default left off. ValueError for a field `version` has no place for that is not at its
    default."""
    if version not in NAMED_VERSIONS:
        raise ValueError(f"no named command form in version {version}")
    kind = type(cmd)
    if _content_version(cmd) > version:
        raise ValueError(f"{kind.__name__} as given cannot be written in version {version}: {cmd}")
    values = {}
    for name in _FIELD_NAMES[kind]:
        value = getattr(cmd, name)
        if not _is_default(kind, name, value):
            if _ADDED_IN.get(kind, {}).get(name, 1) > version:
                raise ValueError(f"{kind.__name__} field {name} cannot be written in version {version}")
            values[name] = _to_wire(value)
    return [_TAGS[kind], values]


def decode_command(wire: Any) -> Command:
    """The command of a named form (any of `NAMED_VERSIONS`); anything else raises `CommandDecodeError`."""
    with _decode_errors():
        if type(wire) is not list or len(wire) != 2 or type(wire[1]) is not dict:
            raise CommandDecodeError("not a command [tag, {field: value}]")
        kind, values = _kind(wire[0]), wire[1]
        unknown = [name for name in values if name not in _FIELD_NAMES[kind]]
        if unknown:
            raise CommandDecodeError(f"{kind.__name__} has no field {unknown}")
        missing = sorted(_REQUIRED[kind].difference(values))
        if missing:
            raise CommandDecodeError(f"{kind.__name__} lacks {missing}")
        return kind(**{name: _from_wire(name, value) for name, value in values.items()})


def encode_command_v0(meta: EntryMeta, cmd: Command) -> bytes:
    """The version-0 bytes of a command applied with `meta`, trailing fields an older form left off
    omitted while None. A field version 0 has no place for must hold its default."""
    kind = type(cmd)
    if _content_version(cmd) > 0:
        raise ValueError(f"{cmd} cannot be written in version 0")
    names = _V0_FIELDS[kind]
    lost = [n for n in _FIELD_NAMES[kind] if n not in names and not _is_default(kind, n, getattr(cmd, n))]
    if lost:
        raise ValueError(f"{kind.__name__} fields {lost} cannot be written in version 0")
    values = [_to_wire(getattr(cmd, name)) for name in names]
    for _ in range(_V0_SHORTER.get(kind, 0)):
        if values[-1] is not None:
            break
        values.pop()
    packed: bytes = msgpack.packb([_TAGS[kind], meta.now_ms, *values])
    return packed


def decode_command_v0(data: bytes) -> tuple[EntryMeta, Command]:
    """The meta and command of version-0 bytes; anything else raises `CommandDecodeError`."""
    with _decode_errors():
        raw = msgpack.unpackb(data, raw=False, strict_map_key=True)
        if type(raw) is not list or len(raw) < 2:
            raise CommandDecodeError("not a version-0 command [tag, now_ms, ...]")
        kind, meta, values = _kind(raw[0]), EntryMeta(raw[1]), raw[2:]
        names = _V0_FIELDS[kind]
        if not len(names) - _V0_SHORTER.get(kind, 0) <= len(values) <= len(names):
            raise CommandDecodeError(f"{kind.__name__} takes {len(names) + 1} fields, got {len(raw) - 1}")
        command = kind(**{name: _from_wire(name, value) for name, value in zip(names, values, strict=False)})
        return meta, command


@contextlib.contextmanager
def _decode_errors() -> Iterator[None]:
    """Every way decoding fails, as `CommandDecodeError`."""
    try:
        yield
    except CommandDecodeError:
        raise
    except (InvalidCommand, ArgumentError) as error:
        raise CommandDecodeError(str(error)) from error
    except Exception as error:  # msgpack and malformed values fail in several unrelated ways
        raise CommandDecodeError(f"malformed command: {error!r}") from error


def _kind(tag: Any) -> type[Command]:
    if type(tag) is not int or tag not in _TYPES:
        raise CommandDecodeError(f"unknown command tag {tag!r}")
    return _TYPES[tag]
