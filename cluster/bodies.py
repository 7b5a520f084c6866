"""Message bodies of one queue replica, kept in the node's RocksDB next to the group's log.

Writes are staged into the node's pending batch (made durable by the next group commit); a small
write-through dict lets the leader read a body staged in this very round.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import msgpack

from raft_log.storage import GroupLog

_ID = struct.Struct(">Q")
BODY_PREFIX = b"b"


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A body with its headers and the encoding the publisher used."""

    body: bytes
    headers: dict[str, Any]
    encoding: str


def _key(message_id: int) -> bytes:
    return BODY_PREFIX + _ID.pack(message_id)


class BodyStore:
    """Bodies by message id."""

    def __init__(self, group_log: GroupLog) -> None:
        self._log = group_log
        self._staged: dict[int, bytes | None] = {}

    def put(self, message_id: int, message: StoredMessage) -> None:
        """Store a body under its id."""
        value = msgpack.packb([message.body, message.headers, message.encoding])
        self._log.app_put(_key(message_id), value)
        self._staged[message_id] = value

    def delete(self, ids: Iterable[int]) -> None:
        """Forget bodies for good."""
        for message_id in ids:
            self._log.app_delete(_key(message_id))
            self._staged[message_id] = None

    def get(self, message_id: int) -> StoredMessage | None:
        """A body, or None when it is not stored."""
        if message_id in self._staged:
            value = self._staged[message_id]
        else:
            value = self._log.app_get(_key(message_id))
        if value is None:
            return None
        body, headers, encoding = msgpack.unpackb(value, raw=False)
        return StoredMessage(body, headers, encoding)

    def committed(self) -> None:
        """The staged writes are now in the database."""
        self._staged.clear()

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        """Every stored (key, value), for exporting a snapshot."""
        yield from self._log.app_items(BODY_PREFIX)

    def replace_all(self, items: Iterable[tuple[bytes, bytes]]) -> None:
        """Drop every body and store these instead (installing a leader's snapshot)."""
        for key, _ in list(self._log.app_items(BODY_PREFIX)):
            self._log.app_delete(key)
        for key, value in items:
            self._log.app_put(key, value)
        self._staged.clear()
