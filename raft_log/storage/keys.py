"""Key layout of a node's RocksDB database.

- `N<name>`: node-level records, outside every group: `Nincarnation`, the node's incarnation (a random
  id written when the database is created; docs/decisions/0009-incarnations.md); `Ndrops`, written when
  the database is created by a version that records dropped groups (a promise that every drop since
  of a group id that may be used again left its tombstone: running an earlier version on such a
  database breaks it, and a downgrade past this version is not supported); `Ndropped:<group id>`, a
  tombstone kept for every group dropped while its id could be used again (a replica removed from a
  queue that still exists; not a deleted queue's).
- `G<group id>`: the registry, one empty value per group (lists groups without scanning their logs).
- `g<u16 length><group id><kind>...`: every record of one group. The length prefix keeps one group's
  keys from being a prefix of another's, so a group is the contiguous range `[prefix, prefix + 0xff)`.
  Kinds: `H` hard state, `C` conf state, `O` log start (index and term of the compaction point),
  `M` snapshot meta, `S` snapshot data, `R` repair marker (only while the group is repairing),
  `E<u64 big-endian index>` entries (sorted by index), `A<key>` the application's own key space.
"""

from __future__ import annotations

from ..types import GroupId

NODE_INCARNATION = b"Nincarnation"
RECORDS_DROPS = b"Ndrops"
_DROPPED = b"Ndropped:"
_REGISTRY = b"G"
_REGISTRY_END = b"H"
_GROUP = b"g"
_ENTRY = b"E"
_APP = b"A"
_INDEX_BYTES = 8


def every_key_range() -> tuple[bytes, bytes]:
    """A key range `[lo, hi)` holding every key of the layout (each starts with `N`, `G` or `g`)."""
    return b"", b"\xff"


def registry_key(gid: GroupId) -> bytes:
    """The key marking that group `gid` exists."""
    return _REGISTRY + gid.encode()


def dropped_key(gid: GroupId) -> bytes:
    """The key marking that group `gid` was held here and dropped."""
    return _DROPPED + gid.encode()


def registry_range() -> tuple[bytes, bytes]:
    """The key range `[lo, hi)` holding every registry key."""
    return _REGISTRY, _REGISTRY_END


def group_id_of(registry_key_: bytes) -> GroupId:
    """The group id a registry key names."""
    return registry_key_[len(_REGISTRY) :].decode()


def _prefix_end(prefix: bytes) -> bytes:
    """The smallest key greater than every key starting with `prefix` (which holds a byte below 0xff)."""
    stripped = prefix.rstrip(b"\xff")
    return stripped[:-1] + bytes([stripped[-1] + 1])


class GroupKeys:
    """Every key of one group, computed from its id once."""

    def __init__(self, gid: GroupId) -> None:
        encoded = gid.encode()
        if len(encoded) > 0xFFFF:
            raise ValueError("group id longer than 65535 bytes")
        self.prefix = _GROUP + len(encoded).to_bytes(2, "big") + encoded
        self.end = self.prefix + b"\xff"
        self.hard_state = self.prefix + b"H"
        self.conf_state = self.prefix + b"C"
        self.log_start = self.prefix + b"O"
        self.snapshot_meta = self.prefix + b"M"
        self.snapshot_data = self.prefix + b"S"
        self.repair = self.prefix + b"R"
        self._entry = self.prefix + _ENTRY
        self.entries_end = self.prefix + bytes([_ENTRY[0] + 1])
        self._app = self.prefix + _APP

    def entry(self, index: int) -> bytes:
        """The key of the entry at `index`."""
        return self._entry + index.to_bytes(_INDEX_BYTES, "big")

    def entry_index(self, key: bytes) -> int:
        """The index an entry key holds."""
        return int.from_bytes(key[len(self._entry) :], "big")

    def app(self, key: bytes) -> bytes:
        """The database key of the application key `key`."""
        return self._app + key

    def app_range(self, prefix: bytes) -> tuple[bytes, bytes]:
        """The database key range `[lo, hi)` of the application keys starting with `prefix`."""
        lo = self._app + prefix
        return lo, _prefix_end(lo)

    def app_key(self, key: bytes) -> bytes:
        """The application key a database key holds."""
        return key[len(self._app) :]
