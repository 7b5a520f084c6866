"""Pieces of msgpack encodings, for building a value around a large byte string without copying it twice."""

from __future__ import annotations


def bin_header(size: int) -> bytes:
    """The msgpack header of a bin (byte string) of `size` bytes."""
    if size < 1 << 8:
        return b"\xc4" + size.to_bytes(1, "big")
    if size < 1 << 16:
        return b"\xc5" + size.to_bytes(2, "big")
    return b"\xc6" + size.to_bytes(4, "big")


def array_header(length: int) -> bytes:
    """The msgpack header of an array of `length` items."""
    if length < 16:
        return bytes([0x90 | length])
    if length < 1 << 16:
        return b"\xdc" + length.to_bytes(2, "big")
    return b"\xdd" + length.to_bytes(4, "big")
