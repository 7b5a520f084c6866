"""The command codec: version 1 by named fields, version 0 positional with the time first.

Version-0 bytes are built here from literal lists, as the code before version 1 wrote them, so these
tests keep saying what old logs hold whatever the encoder becomes."""

from __future__ import annotations

import contextlib
from typing import Any, get_args

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st
from queue_state_strategies import (
    commands,
    commands_before_version_2,
    commands_before_version_3,
    commands_before_version_4,
    commands_before_version_5,
    commands_before_version_6,
    commands_before_version_10,
    commands_before_version_11,
    commands_before_version_12,
    commands_before_version_13,
    metas,
)

from queue_state.arguments import parse_arguments
from queue_state.command_codec import (
    NAMED_VERSIONS,
    CommandDecodeError,
    decode_command,
    decode_command_v0,
    encode_command,
    encode_command_v0,
)
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


@given(commands)
def test_every_command_survives_a_round_trip_in_the_newest_version(cmd: Command) -> None:
    assert decode_command(encode_command(cmd)) == cmd


@given(commands_before_version_13)
def test_every_command_without_a_version_13_form_survives_a_version_12_round_trip(cmd: Command) -> None:
    assert decode_command(encode_command(cmd, 12)) == cmd


@given(commands_before_version_12)
def test_every_command_without_a_version_12_form_survives_a_version_11_round_trip(cmd: Command) -> None:
    assert decode_command(encode_command(cmd, 11)) == cmd


@given(commands_before_version_11)
def test_every_command_without_a_version_11_form_survives_a_version_10_round_trip(cmd: Command) -> None:
    assert decode_command(encode_command(cmd, 10)) == cmd


@given(commands_before_version_10)
def test_every_command_without_a_version_10_form_survives_a_version_9_round_trip(cmd: Command) -> None:
    assert decode_command(encode_command(cmd, 9)) == cmd


@given(commands_before_version_6)
def test_every_command_without_a_version_6_form_survives_a_version_5_round_trip(cmd: Command) -> None:
    assert decode_command(encode_command(cmd, 5)) == cmd


def test_rule_a_message_priority_and_x_max_priority_are_written_from_version_6_only() -> None:
    enqueue = Enqueue((NewMessage(3, None, None, 7), NewMessage(4)))
    assert encode_command(enqueue) == [1, {"messages": [[3, None, None, 7], [4, None]]}]
    assert decode_command(encode_command(enqueue)) == enqueue
    declared = UpdateConfig(parse_arguments({"x-max-priority": 5}))
    for command in (enqueue, declared):
        for version in (1, 2, 3, 4, 5):
            with pytest.raises(ValueError):
                encode_command(command, version)
        with pytest.raises(ValueError):
            encode_command_v0(EntryMeta(5), command)
    with pytest.raises(CommandDecodeError, match="priority"):
        decode_command([1, {"messages": [[3, None, None, 256]]}])


@given(commands_before_version_5)
def test_every_command_without_a_version_5_form_survives_a_version_4_round_trip(cmd: Command) -> None:
    assert decode_command(encode_command(cmd, 4)) == cmd


@given(commands_before_version_4)
def test_every_command_without_a_version_4_form_survives_a_version_3_round_trip(cmd: Command) -> None:
    assert decode_command(encode_command(cmd, 3)) == cmd


@given(commands_before_version_3)
def test_every_command_without_a_version_3_field_survives_a_version_2_round_trip(cmd: Command) -> None:
    assert decode_command(encode_command(cmd, 2)) == cmd


@pytest.mark.parametrize(
    ("command", "field"),
    [
        (Return((1,), None, failed=False), "failed"),
        (Cancel("c", failed=False), "failed"),
        (Discard((1,), "c", reason="bad input"), "reason"),
    ],
)
def test_rule_counting_fields_are_written_only_from_version_3(command: Command, field: str) -> None:
    assert field in encode_command(command, 3)[1]
    for version in (1, 2):
        with pytest.raises(ValueError, match=field):
            encode_command(command, version)
    with pytest.raises(ValueError, match=field):
        encode_command_v0(EntryMeta(5), command)


def test_rule_returns_and_cancels_of_old_logs_decode_as_failures_and_discards_without_a_reason() -> None:
    """Entries written before version 3 leave the fields off: a Return and a Cancel then count a failed
    delivery, as every one did then, and a Discard has no reason; the default is left off again."""
    assert decode_command([6, {"ids": [1]}]) == Return((1,), None, failed=True)
    assert decode_command([3, {"consumer": "c"}]) == Cancel("c", failed=True)
    assert decode_command([7, {"ids": [1]}]).reason is None  # type: ignore[union-attr]
    assert decode_command_v0(msgpack.packb([6, 9, [1], None]))[1] == Return((1,), None, failed=True)
    assert decode_command_v0(msgpack.packb([3, 9, "c"]))[1] == Cancel("c", failed=True)
    assert encode_command(Return((1,), None), 2) == encode_command(Return((1,), None), 3) == [6, {"ids": [1]}]
    assert encode_command(Cancel("c"), 1) == [3, {"consumer": "c"}]


def test_a_reason_longer_than_256_characters_is_refused() -> None:
    assert Discard((1,), reason="x" * 256).reason == "x" * 256
    with pytest.raises(CommandDecodeError, match="256"):
        decode_command([7, {"ids": [1], "reason": "x" * 257}])
    with pytest.raises(CommandDecodeError, match="failed"):
        decode_command([6, {"ids": [1], "failed": "no"}])


@given(commands_before_version_2)
def test_every_command_without_a_version_2_field_survives_a_version_1_round_trip(cmd: Command) -> None:
    assert decode_command(encode_command(cmd, 1)) == cmd


def test_rule_a_readers_time_is_written_only_from_version_2_and_defaults_to_none() -> None:
    reader = Checkout("r", 2, since_ms=40)
    assert encode_command(reader) == [2, {"consumer": "r", "prefetch": 2, "since_ms": 40}]
    with pytest.raises(ValueError, match="since_ms"):
        encode_command(reader, 1)
    with pytest.raises(ValueError, match="since_ms"):
        encode_command_v0(EntryMeta(5), reader)
    assert encode_command(Checkout("c", 2), 1) == encode_command(
        Checkout("c", 2)
    )  # left off: old nodes read it
    assert decode_command([2, {"consumer": "c", "prefetch": 2}]).since_ms is None
    with pytest.raises(ValueError):
        encode_command(Tick(), NAMED_VERSIONS[-1] + 1)


@given(commands)
def test_the_version_1_form_survives_msgpack(cmd: Command) -> None:
    wire = msgpack.unpackb(msgpack.packb(encode_command(cmd)), raw=False)
    assert decode_command(wire) == cmd


@given(metas, commands_before_version_2)
def test_every_command_survives_a_version_0_round_trip_with_its_meta(meta: EntryMeta, cmd: Command) -> None:
    assert decode_command_v0(encode_command_v0(meta, cmd)) == (meta, cmd)


def test_version_1_names_fields_and_leaves_those_at_their_default_off() -> None:
    assert encode_command(Tick()) == [10, {}]
    assert encode_command(Checkout("c", 2)) == [2, {"consumer": "c", "prefetch": 2}]
    assert encode_command(Enqueue((NewMessage(3), NewMessage(4, 60)), "p", 9)) == [
        1,
        {"messages": [[3, None], [4, 60]], "publisher": "p", "seq": 9},
    ]
    assert encode_command(UpdateConfig(parse_arguments({"x-max-length": 5}))) == [
        11,
        {"config": {"x-queue-type": "quorum", "x-max-length": 5}},
    ]


def test_a_field_added_with_a_default_replays_entries_written_before_it() -> None:
    # as a version-1 entry written before since_ms and max_bytes would read
    assert decode_command([14, {"consumer": "spark", "count": 3}]) == DurableCheckout("spark", 3)
    assert decode_command([2, {"consumer": "c", "prefetch": 1}]) == Checkout("c", 1, 0, None)


@pytest.mark.parametrize(
    "wire",
    [
        [3, {"consumer": "c", "reason": "gone"}],  # a field the command does not have
        [3, {}],  # a field without a default missing
        [3, {1: "c"}],  # a key that is not a field name
        [99, {}],  # unknown tag
        [True, {}],  # a bool is not a tag
        [3, ["c"]],  # positional, not named
        [3, {"consumer": "c"}, None],
        [2, {"consumer": "c", "prefetch": True}],  # bool where an int belongs
        [2, {"consumer": "c", "prefetch": 0}],  # prefetch 0
        [5, {"ids": [1, "x"]}],  # an id that is not an int
        [5, {"ids": (1,)}],  # ids not a list
        [1, {"messages": [[10, None]], "seq": 3}],  # seq without publisher
        [1, {"messages": [10]}],  # a message that is not [size, expiration_ms]
        [11, {"config": {"x-max-length": -1}}],  # invalid config
        {"tag": 1},
        b"\x92\x0a\x80",  # version-0-like bytes are not a version-1 form
    ],
)
def test_malformed_version_1_commands_are_rejected_with_command_decode_error(wire: Any) -> None:
    with pytest.raises(CommandDecodeError):
        decode_command(wire)


# Every version-0 form: [tag, now_ms, positional values...], as the code before version 1 wrote them.
VERSION_0_FORMS: list[tuple[list[Any], Command]] = [
    ([1, 5, [[10, None], [20, 300]], "p", 7], Enqueue((NewMessage(10), NewMessage(20, 300)), "p", 7)),
    ([1, 5, [[10, None]], None, None], Enqueue((NewMessage(10),))),
    ([2, 5, "c", 3, 1, 30000], Checkout("c", 3, 1, 30000)),
    ([2, 5, "c", 3, 0, None], Checkout("c", 3)),
    ([3, 5, "c"], Cancel("c")),
    ([4, 5, "c"], ConsumerDown("c")),
    ([5, 5, [1, 2], "c"], Settle((1, 2), "c")),
    ([5, 5, [1], None], Settle((1,))),
    ([6, 5, [3], "c"], Return((3,), "c")),
    ([7, 5, [4], None], Discard((4,))),
    ([8, 5, "h", 2, False, None], Get("h", 2, False)),
    ([8, 5, "h", 2, True, 100], Get("h", 2, True, 100)),
    ([9, 5], Purge()),
    ([10, 5], Tick()),
    ([11, 5, {"x-max-length": 5}], UpdateConfig(parse_arguments({"x-max-length": 5}))),
    ([12, 5, "w", 4], DlxCheckout("w", 4)),
    ([13, 5, [1, 2]], DlxSettle((1, 2))),
    ([14, 5, "spark", 3], DurableCheckout("spark", 3)),  # logged before since_ms and max_bytes
    ([14, 5, "spark", 3, 100], DurableCheckout("spark", 3, 100)),
    ([14, 5, "spark", 3, None, 9], DurableCheckout("spark", 3, None, 9)),
    ([15, 5, "spark", 4], DurableSettle("spark", 4)),
    ([16, 5, True, False], Seal(True, False)),
]


@pytest.mark.parametrize(("literal", "command"), VERSION_0_FORMS)
def test_every_version_0_form_decodes_into_the_same_record_and_its_time(
    literal: list[Any], command: Command
) -> None:
    assert decode_command_v0(msgpack.packb(literal)) == (EntryMeta(5), command)


def test_every_command_kind_before_version_4_has_a_version_0_form_here() -> None:
    added_later = {Touch, ApplyPolicy, StartRedrive, RedriveCheckout, RedriveSettle, EndRedrive}
    assert {type(command) for _, command in VERSION_0_FORMS} == set(get_args(Command)) - added_later
    with pytest.raises(CommandDecodeError):
        decode_command_v0(msgpack.packb([17, 5, [1], "c"]))  # a touch has no version-0 form


@pytest.mark.parametrize(
    ("command", "literal"),
    [
        (DurableCheckout("spark", 3), [14, 5, "spark", 3]),
        (DurableCheckout("spark", 3, max_bytes=9), [14, 5, "spark", 3, None, 9]),
        (Checkout("c", 3), [2, 5, "c", 3, 0, None]),
        (Tick(), [10, 5]),
    ],
)
def test_version_0_is_written_as_the_code_before_version_1_wrote_it(command: Command, literal: list) -> None:
    assert encode_command_v0(EntryMeta(5), command) == msgpack.packb(literal)


@pytest.mark.parametrize(
    "literal",
    [
        [14, 5, "spark"],  # shorter than the oldest form
        [3, 5, "c", None],  # longer than the form
        [3],  # no time
        [3, -1, "c"],  # a negative time
        [3, "5", "c"],  # a time that is not an int
        [99, 1],  # unknown tag
        [2, 1, "c", True, 0, None],  # bool where an int belongs
        [1, 1, [[10, None]], None, 3],  # seq without publisher
        [11, 1, {"x-max-length": -1}],  # invalid config
        {"tag": 1},
    ],
)
def test_malformed_version_0_commands_are_rejected_with_command_decode_error(literal: Any) -> None:
    with pytest.raises(CommandDecodeError):
        decode_command_v0(msgpack.packb(literal))


def test_truncated_version_0_bytes_are_rejected_with_command_decode_error() -> None:
    with pytest.raises(CommandDecodeError):
        decode_command_v0(msgpack.packb([2, 1, "c", 2, 0, None])[:-1])


@given(st.binary(max_size=64))
def test_decoding_random_bytes_raises_only_command_decode_error(data: bytes) -> None:
    with contextlib.suppress(CommandDecodeError):
        decode_command_v0(data)


wire_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.text(max_size=5)
    | st.binary(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12,
)
field_names = st.sampled_from(["messages", "publisher", "seq", "consumer", "ids", "config", "count", "x"])


@given(st.integers(0, 17), st.lists(wire_values, max_size=5))
def test_decoding_wrongly_shaped_version_0_commands_raises_only_command_decode_error(
    tag: int, fields
) -> None:
    with contextlib.suppress(CommandDecodeError):
        decode_command_v0(msgpack.packb([tag, *fields]))


@given(st.integers(0, 17), st.dictionaries(field_names, wire_values, max_size=4))
def test_decoding_wrongly_shaped_version_1_commands_raises_only_command_decode_error(
    tag: int, fields
) -> None:
    with contextlib.suppress(CommandDecodeError):
        decode_command([tag, fields])


@given(wire_values)
def test_decoding_any_value_as_version_1_raises_only_command_decode_error(wire: Any) -> None:
    with contextlib.suppress(CommandDecodeError):
        decode_command(wire)


def test_commands_and_metas_validate_their_fields_when_built() -> None:
    with pytest.raises(InvalidCommand):
        NewMessage(size=-1)
    with pytest.raises(InvalidCommand):
        Enqueue((NewMessage(1),), seq=1)
    with pytest.raises(InvalidCommand):
        Settle([1])  # type: ignore[arg-type]  # a list, not a tuple
    with pytest.raises(InvalidCommand):
        EntryMeta(-1)
