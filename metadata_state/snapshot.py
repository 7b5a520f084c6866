"""The metadata machine's snapshot: the whole state as one msgpack map with a version key."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import msgpack

from metadata_state import legacy_formats
from metadata_state.machine import MetadataMachine
from metadata_state.records import (
    BindingRecord,
    ExchangeRecord,
    NodeInfo,
    PolicyRecord,
    QueueInfo,
    UserRecord,
)

# 1: no version key, queues without `members_fence`; 2: adds both; 3: nodes with `incarnation`, queues
# with `initial_incarnations`; 4: `policies` and `policies_revision`, written once a policy was set (a
# node that reads only version 3 restores a cluster's metadata that never had policies); 5: nodes with
# `earlier_incarnation`, written only once a node came back as another incarnation; 6: queues keep
# `initial_members` past a fenced membership change, written only once one was applied (a version that
# reads 5 takes initial members for a membership never changed); 7: `operator_policies`, written only while
# one exists; 8: `exchanges`, `bindings` and `routing_revision`, written once an exchange or a binding
# changed (a node that reads only version 7 restores a cluster's metadata that never used them).
# Versions 1 and 2 are only read, through `legacy_formats` (docs/internals/formats.md lists every version).
SNAPSHOT_VERSION = 8


def encode_snapshot(machine: MetadataMachine) -> bytes:
    """The whole state as msgpack, in the oldest version that holds it."""
    nodes = [_node_fields(n) for n in machine.nodes.values()]
    policies: dict[str, Any] = (
        {
            "policies": [asdict(p) for p in machine.policies.values()],
            "policies_revision": machine.policies_revision,
        }
        if machine.policies_revision
        else {}
    )
    if machine.operator_policies:
        policies["operator_policies"] = [asdict(p) for p in machine.operator_policies.values()]
    routing: dict[str, Any] = (
        {
            "exchanges": [asdict(e) for e in machine.exchanges.values()],
            "bindings": [asdict(b) for b in machine.bindings.values()],
            "routing_revision": machine.routing_revision,
        }
        if machine.routing_revision
        else {}
    )
    data: bytes = msgpack.packb(
        {
            "version": _version(machine, nodes, bool(policies)),
            **policies,
            **routing,
            "nodes": nodes,
            "queues": [asdict(q) for q in machine.queues.values()],
            "next_group": machine.next_group,
            "users": [asdict(u) for u in machine.users.values()],
            "users_initialised": machine.users_initialised,
        }
    )
    return data


def _version(machine: MetadataMachine, nodes: list[dict[str, str]], policies: bool) -> int:
    """The oldest snapshot version that holds the state."""
    if machine.routing_revision:
        return 8
    if machine.operator_policies:
        return 7
    if any(q.initial_members and q.membership_changed for q in machine.queues.values()):
        return 6
    if any("earlier_incarnation" in n for n in nodes):
        return 5
    return 4 if policies else 3


def _node_fields(node: NodeInfo) -> dict[str, str]:
    """A node's fields; `earlier_incarnation` only when set (versions before 5 have none)."""
    fields = asdict(node)
    if not node.earlier_incarnation:
        del fields["earlier_incarnation"]
    return fields


def decode_snapshot(data: bytes) -> MetadataMachine:
    """Rebuild the state from `encode_snapshot` output of this version or an earlier one (ValueError for
    a later one; versions 1 and 2 through `legacy_formats`); fields an earlier version lacks get their
    defaults (a version-1 queue is UNFENCED; nodes and queues of versions 1 and 2 know no incarnations;
    versions before 4, no policies; before 5, no earlier incarnations; before 6, a queue whose membership
    changed lists no initial members; before 7, no operator policies; before 8, no exchanges, no bindings
    and routing revision 0)."""
    raw = msgpack.unpackb(data, raw=False)
    version = legacy_formats.snapshot_version(raw)
    if version in legacy_formats.SNAPSHOT_VERSIONS:
        raw = legacy_formats.snapshot_as_version_3(raw)
    elif version > SNAPSHOT_VERSION:
        raise ValueError(f"metadata snapshot version {version} is newer than {SNAPSHOT_VERSION}")
    return MetadataMachine(
        nodes={n["name"]: NodeInfo(**n) for n in raw["nodes"]},
        queues={q["name"]: QueueInfo(**q) for q in raw["queues"]},
        next_group=raw["next_group"],
        users={u["name"]: UserRecord(**u) for u in raw["users"]},
        users_initialised=raw["users_initialised"],
        policies={p["name"]: PolicyRecord(**p) for p in raw.get("policies", [])},
        policies_revision=raw.get("policies_revision", 0),
        operator_policies={p["name"]: PolicyRecord(**p) for p in raw.get("operator_policies", [])},
        exchanges={(e["vhost"], e["name"]): ExchangeRecord(**e) for e in raw.get("exchanges", [])},
        bindings={b.key: b for b in (BindingRecord(**fields) for fields in raw.get("bindings", []))},
        routing_revision=raw.get("routing_revision", 0),
    )
