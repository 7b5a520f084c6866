"""The wire form of metadata commands (inside the metadata group's entries and relayed in control
frames), versioned.

- Version 5: `[5, tag, {field: value}]`, as version 4, where a command may be a vhost's
  (`DeclareVhost`, `DeleteVhost`) or `ClearPermissions`, and `SetPermissions`, `SetPolicy` and
  `ClearPolicy` may carry a `vhost` other than `/` (earlier versions leave it off).
- Version 4: `[4, tag, {field: value}]`, as version 3, where a command may be an exchange's or a
  binding's (`DeclareExchange`, `DeleteExchange`, `Bind`, `Unbind`).
- Version 3: `[3, tag, {field: value}]`, as version 2, where a policy's command may carry `operator`
  (an operator policy's); versions 1 and 2 leave it off, and cannot write an operator policy's.
- Version 2: `[2, tag, {field: value}]`, as version 1, where a command may be a policy's (`SetPolicy`,
  `ClearPolicy`).
- Version 1: `[1, tag, {field: value}]`, fields by name, so a field added later with a default still
  decodes what was written before it (a field this version does not know is refused: an entry of a
  later version).
- Version 0, written before versions existed: the raw list `[tag, value, ...]` with the fields in
  order, including the short forms older nodes wrote (`register_node` without an incarnation,
  `set_members` without a fence or with a null one). It still decodes, so old logs replay; and it is
  what a node writes while a node of the cluster may run a version that reads nothing else
  (`cluster/replication/format_versions.py`).

A change older nodes cannot read (a new command, a new field) raises CODEC_VERSION; keep `encode` able
to write every version a cluster may still need.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from metadata_state.commands import (
    Bind,
    BootstrapUsers,
    ClearPermissions,
    ClearPolicy,
    Command,
    Declare,
    DeclareExchange,
    DeclareVhost,
    Delete,
    DeleteExchange,
    DeleteUser,
    DeleteVhost,
    ForgetNode,
    InvalidCommand,
    PutUser,
    RegisterNode,
    SetArguments,
    SetMembers,
    SetPermissions,
    SetPolicy,
    Unbind,
)

CODEC_VERSION = 5
POLICY_CODEC_VERSION = 2
"""The first version with policies: a node that reads an older one refuses their commands."""
OPERATOR_POLICY_CODEC_VERSION = 3
"""The first version with operator policies (`SetPolicy.operator`, `ClearPolicy.operator`)."""
EXCHANGE_CODEC_VERSION = 4
"""The first version with exchanges and bindings: `DeclareExchange`, `DeleteExchange`, `Bind`, `Unbind`."""
VHOST_CODEC_VERSION = 5
"""The first version with virtual hosts: `DeclareVhost`, `DeleteVhost`, `ClearPermissions`, and a
`vhost` on `SetPermissions`, `SetPolicy` and `ClearPolicy`."""

_TAGS: dict[type[Command], str] = {
    RegisterNode: "register_node",
    ForgetNode: "forget_node",
    Declare: "declare",
    Delete: "delete",
    SetMembers: "set_members",
    SetArguments: "set_arguments",
    BootstrapUsers: "bootstrap_users",
    PutUser: "put_user",
    DeleteUser: "delete_user",
    SetPermissions: "set_permissions",
    SetPolicy: "set_policy",
    ClearPolicy: "clear_policy",
    DeclareExchange: "declare_exchange",
    DeleteExchange: "delete_exchange",
    Bind: "bind",
    Unbind: "unbind",
    DeclareVhost: "declare_vhost",
    DeleteVhost: "delete_vhost",
    ClearPermissions: "clear_permissions",
}
_ADDED_IN: dict[type[Command], int] = {
    SetPolicy: POLICY_CODEC_VERSION,
    ClearPolicy: POLICY_CODEC_VERSION,
    DeclareExchange: EXCHANGE_CODEC_VERSION,
    DeleteExchange: EXCHANGE_CODEC_VERSION,
    Bind: EXCHANGE_CODEC_VERSION,
    Unbind: EXCHANGE_CODEC_VERSION,
    DeclareVhost: VHOST_CODEC_VERSION,
    DeleteVhost: VHOST_CODEC_VERSION,
    ClearPermissions: VHOST_CODEC_VERSION,
}
_FIELD_ADDED_IN: dict[tuple[type[Command], str], int] = {
    (SetPolicy, "operator"): OPERATOR_POLICY_CODEC_VERSION,
    (ClearPolicy, "operator"): OPERATOR_POLICY_CODEC_VERSION,
    (SetPermissions, "vhost"): VHOST_CODEC_VERSION,
    (SetPolicy, "vhost"): VHOST_CODEC_VERSION,
    (ClearPolicy, "vhost"): VHOST_CODEC_VERSION,
}
"""A field added after its command, with the version it came in: left off before it while at its default."""
_KINDS: dict[str, type[Command]] = {tag: kind for kind, tag in _TAGS.items()}
_FIELDS: dict[type[Command], tuple[str, ...]] = {kind: tuple(f.name for f in fields(kind)) for kind in _TAGS}
_DEFAULTS: dict[tuple[type[Command], str], Any] = {
    (kind, f.name): f.default for kind in _TAGS for f in fields(kind) if (kind, f.name) in _FIELD_ADDED_IN
}


class MetadataDecodeError(ValueError):
    """A value that is not a metadata command of a version this node reads."""


def encode(command: Command, version: int = CODEC_VERSION) -> list[Any]:
    """The msgpack-ready form of `command` in codec `version` (ValueError for an unknown one)."""
    kind = type(command)
    if _ADDED_IN.get(kind, 0) > version:
        raise ValueError(f"{kind.__name__} cannot be written in metadata codec version {version!r}")
    values = {name: _to_wire(getattr(command, name)) for name in _FIELDS[kind]}
    for name in list(values):
        if _FIELD_ADDED_IN.get((kind, name), 0) > version and values.pop(name) != _DEFAULTS[(kind, name)]:
            raise ValueError(
                f"{kind.__name__}.{name} cannot be written in metadata codec version {version!r}"
            )
    if version == 0:
        return [_TAGS[kind], *values.values()]
    if 1 <= version <= CODEC_VERSION:
        return [version, _TAGS[kind], values]
    raise ValueError(f"no metadata codec version {version!r}")


def decode(value: object, reads: int = CODEC_VERSION) -> Command:
    """The command a value of any version `encode` writes, up to `reads` (the newest this node's build
    reads: an older build's, in the whole-node simulation), stands for, or MetadataDecodeError."""
    if not isinstance(value, list) or not value:
        raise MetadataDecodeError(f"a metadata command is a non-empty list, got {value!r}")
    head = value[0]
    if type(head) is str:
        return _decode_version_0(head, value[1:])
    if type(head) is int and 1 <= head <= CODEC_VERSION:
        if head > reads:
            raise MetadataDecodeError(f"metadata codec version {head}: this node reads up to {reads}")
        if len(value) == 3:
            return _decode_named(head, value[1], value[2])
    raise MetadataDecodeError(f"not a metadata command of a known version: {value!r}")


def _decode_version_0(tag: str, values: list[Any]) -> Command:
    kind = _kind(tag)
    if kind in _ADDED_IN:
        raise MetadataDecodeError(f"{tag} is not a command of metadata codec version 0")
    names = _FIELDS[kind]
    if len(values) > len(names):
        raise MetadataDecodeError(f"{tag} takes at most {len(names)} values, got {len(values)}")
    named = dict(zip(names, values, strict=False))
    if kind is SetMembers and named.get("fence", ()) is None:  # logged before fences existed
        del named["fence"]
    return _build(kind, named)


def _decode_named(version: int, tag: object, named: object) -> Command:
    kind = _kind(tag)
    if _ADDED_IN.get(kind, 0) > version:
        raise MetadataDecodeError(f"{tag} is not a command of metadata codec version {version}")
    if not isinstance(named, dict):
        raise MetadataDecodeError(f"the fields of {tag} are a map, got {named!r}")
    unknown = sorted(
        str(name)
        for name in named
        if name not in _FIELDS[kind] or _FIELD_ADDED_IN.get((kind, name), 0) > version
    )
    if unknown:
        raise MetadataDecodeError(f"{tag} has no fields {unknown} (written by a later version?)")
    return _build(kind, named)


def _kind(tag: object) -> type[Command]:
    kind = _KINDS.get(tag) if isinstance(tag, str) else None
    if kind is None:
        raise MetadataDecodeError(f"unknown metadata command {tag!r}")
    return kind


def _build(kind: type[Command], named: dict[str, Any]) -> Command:
    try:
        return kind(**{name: _from_wire(value) for name, value in named.items()})
    except (InvalidCommand, TypeError) as exc:
        raise MetadataDecodeError(f"malformed {_TAGS[kind]}: {exc}") from exc


def _to_wire(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _from_wire(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value
