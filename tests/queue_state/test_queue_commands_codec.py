"""encode_command / decode_command: exact round trips, and only CommandDecodeError on bad bytes."""

from __future__ import annotations

import contextlib

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st
from queue_state_strategies import commands

from queue_state.commands import (
    Checkout,
    CommandDecodeError,
    DurableCheckout,
    Enqueue,
    InvalidCommand,
    NewMessage,
    Settle,
    decode_command,
    encode_command,
)


@given(commands)
def test_every_command_survives_an_encode_decode_round_trip(cmd) -> None:
    assert decode_command(encode_command(cmd)) == cmd


def test_a_durable_checkout_without_its_added_fields_keeps_the_older_three_field_form() -> None:
    older = msgpack.packb([14, 5, "spark", 3])  # as logged before since_ms and max_bytes existed
    assert decode_command(older) == DurableCheckout(5, "spark", 3)
    assert encode_command(DurableCheckout(5, "spark", 3)) == older
    assert decode_command(encode_command(DurableCheckout(5, "spark", 3, max_bytes=9))).max_bytes == 9
    with pytest.raises(CommandDecodeError):
        decode_command(msgpack.packb([14, 5, "spark"]))


@given(st.binary(max_size=64))
def test_decoding_random_bytes_raises_only_command_decode_error(data: bytes) -> None:
    with contextlib.suppress(CommandDecodeError):
        decode_command(data)


wire_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.text(max_size=5)
    | st.binary(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12,
)


@given(st.integers(0, 17), st.lists(wire_values, max_size=5))
def test_decoding_wrongly_shaped_commands_raises_only_command_decode_error(tag: int, fields) -> None:
    with contextlib.suppress(CommandDecodeError):
        decode_command(msgpack.packb([tag, *fields]))


@pytest.mark.parametrize(
    "data",
    [
        encode_command(Checkout(1, "c", 2))[:-1],  # truncated
        msgpack.packb([99, 1]),  # unknown tag
        msgpack.packb([2, 1, "c", True, 0]),  # bool where an int belongs
        msgpack.packb([2, 1, "c", 0, 0]),  # prefetch 0
        msgpack.packb([5, 1, [1, "x"], None]),  # an id that is not an int
        msgpack.packb([1, 1, [[10, None]], None, 3]),  # seq without publisher
        msgpack.packb([11, 1, {"x-max-length": -1}]),  # invalid config
        msgpack.packb({"tag": 1}),
    ],
)
def test_malformed_commands_are_rejected_with_command_decode_error(data: bytes) -> None:
    with pytest.raises(CommandDecodeError):
        decode_command(data)


def test_commands_validate_their_fields_when_built() -> None:
    with pytest.raises(InvalidCommand):
        NewMessage(size=-1)
    with pytest.raises(InvalidCommand):
        Enqueue(0, (NewMessage(1),), seq=1)
    with pytest.raises(InvalidCommand):
        Settle(0, [1])  # a list, not a tuple
