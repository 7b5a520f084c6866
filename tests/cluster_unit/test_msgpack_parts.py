"""Hand-built msgpack headers match what msgpack itself encodes."""

from __future__ import annotations

import msgpack
import pytest

from raft_log.msgpack_parts import array_header, bin_header


@pytest.mark.parametrize("length", [0, 1, 15, 16, 65535, 65536])
def test_array_header(length: int) -> None:
    items = [None] * length
    assert array_header(length) + b"\xc0" * length == msgpack.packb(items)


@pytest.mark.parametrize("size", [0, 1, 255, 256, 65535, 65536])
def test_bin_header(size: int) -> None:
    data = b"x" * size
    assert bin_header(size) + data == msgpack.packb(data)
