"""Value encodings of the node database: msgpack payloads sealed with a CRC32 over key and payload.

The checksum covers the key too, so an entry's checksum covers its index (in the key), term, kind and
data, and a value copied under the wrong key fails its check.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import TypeVar

import msgpack

from ..msgpack_parts import array_header, bin_header
from ..types import ConfState, Entry, EntryKind, HardState, Repair, SnapshotMeta, conf_fields

_CRC_BYTES = 4
T = TypeVar("T")


class BadRecord(Exception):
    """A stored value failed its checksum or could not be decoded."""


def seal(key: bytes, *payload: bytes) -> bytes:
    """The payload (its parts joined, each copied once) prefixed with the CRC32 of `key + payload`."""
    crc = zlib.crc32(key)
    for part in payload:
        crc = zlib.crc32(part, crc)
    return b"".join((crc.to_bytes(_CRC_BYTES, "big"), *payload))


def unseal(key: bytes, value: bytes) -> bytes:
    """The payload of a sealed value; raises `BadRecord` when the checksum does not match."""
    payload = value[_CRC_BYTES:]
    if len(value) < _CRC_BYTES or zlib.crc32(payload, zlib.crc32(key)) != int.from_bytes(
        value[:_CRC_BYTES], "big"
    ):
        raise BadRecord("checksum mismatch")
    return payload


def _pack(key: bytes, obj: object) -> bytes:
    return seal(key, msgpack.packb(obj, use_bin_type=True))


def _unpack(key: bytes, value: bytes, what: str, build: Callable[..., T]) -> T:
    """Unseal and unpack a msgpack array and build a value from its fields; raises `BadRecord`."""
    try:
        fields = msgpack.unpackb(unseal(key, value), raw=False)
        if not isinstance(fields, list):
            raise TypeError("not an array")
        return build(*fields)
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise BadRecord(f"malformed {what}: {exc}") from exc


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value


def _conf(voters: list[str], learners: list[str], incarnations: list[list[str]] | None = None) -> ConfState:
    """A membership from its stored fields (written before incarnations: none known)."""
    pairs = tuple((_string(node), _string(inc)) for node, inc in incarnations or ())
    return ConfState(voters=tuple(voters), learners=tuple(learners), incarnations=pairs)


def encode_entry(key: bytes, entry: Entry) -> bytes:
    """The stored value of `entry` under `key`: `_pack` of its fields, built with one copy of the data."""
    prefix = array_header(3) + msgpack.packb(entry.term) + msgpack.packb(int(entry.kind))
    return seal(key, prefix + bin_header(len(entry.data)), entry.data)


def decode_entry(key: bytes, index: int, value: bytes) -> Entry:
    """The entry at `index` stored under `key`; raises `BadRecord`."""
    return _unpack(key, value, "entry", lambda term, kind, data: Entry(index, term, EntryKind(kind), data))


def encode_hard_state(key: bytes, hs: HardState) -> bytes:
    """The stored value of a hard state."""
    return _pack(key, [hs.term, hs.vote, hs.commit])


def decode_hard_state(key: bytes, value: bytes) -> HardState:
    """A stored hard state; raises `BadRecord`."""
    return _unpack(key, value, "hard state", HardState)


def encode_conf_state(key: bytes, conf: ConfState) -> bytes:
    """The stored value of a membership."""
    return _pack(key, conf_fields(conf))


def decode_conf_state(key: bytes, value: bytes) -> ConfState:
    """A stored membership; raises `BadRecord`."""
    return _unpack(key, value, "conf state", _conf)


def encode_position(key: bytes, index: int, term: int) -> bytes:
    """The stored value of a log position (index and term)."""
    return _pack(key, [index, term])


def decode_position(key: bytes, value: bytes) -> tuple[int, int]:
    """A stored log position `(index, term)`; raises `BadRecord`."""
    return _unpack(key, value, "log position", lambda index, term: (index, term))


def encode_snapshot_meta(key: bytes, meta: SnapshotMeta) -> bytes:
    """The stored value of a snapshot's metadata."""
    return _pack(key, [meta.index, meta.term, *conf_fields(meta.conf)])


def decode_snapshot_meta(key: bytes, value: bytes) -> SnapshotMeta:
    """Stored snapshot metadata; raises `BadRecord`."""
    return _unpack(
        key, value, "snapshot meta", lambda index, term, *conf: SnapshotMeta(index, term, _conf(*conf))
    )


def encode_incarnation(key: bytes, incarnation: str) -> bytes:
    """The stored value of a node's incarnation."""
    return _pack(key, [incarnation])


def decode_incarnation(key: bytes, value: bytes) -> str:
    """A stored node incarnation; raises `BadRecord`."""
    return _unpack(key, value, "node incarnation", _string)


def encode_repair(key: bytes, repair: Repair) -> bytes:
    """The stored value of a repair marker."""
    return _pack(key, [repair.reason, repair.index, repair.through, repair.conf_through])


def decode_repair(key: bytes, value: bytes) -> Repair:
    """A stored repair marker; raises `BadRecord`."""
    return _unpack(key, value, "repair marker", Repair)
