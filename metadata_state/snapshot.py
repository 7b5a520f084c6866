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
    VhostRecord,
)
from metadata_state.vhost_names import DEFAULT_VHOST, qualified

# 1: no version key, queues without `members_fence`; 2: adds both; 3: nodes with `incarnation`, queues
# with `initial_incarnations`; 4: `policies` and `policies_revision`, written once a policy was set (a
# node that reads only version 3 restores a cluster's metadata that never had policies); 5: nodes with
# `earlier_incarnation`, written only once a node came back as another incarnation; 6: queues keep
# `initial_members` past a fenced membership change, written only once one was applied (a version that
# reads 5 takes initial members for a membership never changed); 7: `operator_policies`, written only while
# one exists; 8: `exchanges`, `bindings` and `routing_revision`, written once an exchange or a binding
# changed (a node that reads only version 7 restores a cluster's metadata that never used them); 9:
# `vhosts`, users' `vhost_permissions` and policies' `vhost`, written only while a vhost other than `/`
# exists (which everything of another vhost needs).
# Versions 1 and 2 are only read, through `legacy_formats` (docs/internals/formats.md lists every version).
SNAPSHOT_VERSION = 9


def encode_snapshot(machine: MetadataMachine) -> bytes:
    """The whole state as msgpack, in the oldest version that holds it."""
    nodes = [_node_fields(n) for n in machine.nodes.values()]
    policies: dict[str, Any] = (
        {
            "policies": [_policy_fields(p) for p in machine.policies.values()],
            "policies_revision": machine.policies_revision,
        }
        if machine.policies_revision
        else {}
    )
    if machine.operator_policies:
        policies["operator_policies"] = [_policy_fields(p) for p in machine.operator_policies.values()]
    routing: dict[str, Any] = (
        {
            "exchanges": [asdict(e) for e in machine.exchanges.values()],
            "bindings": [asdict(b) for b in machine.bindings.values()],
            "routing_revision": machine.routing_revision,
        }
        if machine.routing_revision
        else {}
    )
    vhosts = {"vhosts": [asdict(v) for v in machine.vhosts.values()]} if machine.vhosts else {}
    data: bytes = msgpack.packb(
        {
            "version": _version(machine, nodes, bool(policies)),
            **policies,
            **routing,
            **vhosts,
            "nodes": nodes,
            "queues": [asdict(q) for q in machine.queues.values()],
            "next_group": machine.next_group,
            "users": [_user_fields(u) for u in machine.users.values()],
            "users_initialised": machine.users_initialised,
        }
    )
    return data


def _version(machine: MetadataMachine, nodes: list[dict[str, str]], policies: bool) -> int:
    """The oldest snapshot version that holds the state."""
    if machine.vhosts:
        return 9
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


def _user_fields(user: UserRecord) -> dict[str, Any]:
    """A user's fields; `vhost_permissions` only when it has some (versions before 9 have none)."""
    fields = asdict(user)
    if not user.vhost_permissions:
        del fields["vhost_permissions"]
    return fields


def _policy_fields(policy: PolicyRecord) -> dict[str, Any]:
    """A policy's fields; `vhost` only when not DEFAULT_VHOST (versions before 9 have none)."""
    fields = asdict(policy)
    if policy.vhost == DEFAULT_VHOST:
        del fields["vhost"]
    return fields


def _policies(raw: list[dict[str, Any]]) -> dict[str, PolicyRecord]:
    return {qualified(p.vhost, p.name): p for p in (PolicyRecord(**fields) for fields in raw)}


def decode_snapshot(data: bytes) -> MetadataMachine:
    """Rebuild the state from `encode_snapshot` output of this version or an earlier one (ValueError for
    a later one; versions 1 and 2 through `legacy_formats`); fields an earlier version lacks get their
    defaults (a version-1 queue is UNFENCED; nodes and queues of versions 1 and 2 know no incarnations;
    versions before 4, no policies; before 5, no earlier incarnations; before 6, a queue whose membership
    changed lists no initial members; before 7, no operator policies; before 8, no exchanges, no bindings
    and routing revision 0; before 9, no vhost but DEFAULT_VHOST)."""
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
        policies=_policies(raw.get("policies", [])),
        policies_revision=raw.get("policies_revision", 0),
        operator_policies=_policies(raw.get("operator_policies", [])),
        exchanges={(e["vhost"], e["name"]): ExchangeRecord(**e) for e in raw.get("exchanges", [])},
        bindings={b.key: b for b in (BindingRecord(**fields) for fields in raw.get("bindings", []))},
        routing_revision=raw.get("routing_revision", 0),
        vhosts={v["name"]: VhostRecord(**v) for v in raw.get("vhosts", [])},
    )
