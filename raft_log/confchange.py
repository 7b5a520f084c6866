"""Single-server membership changes: the change record, its encoding and its effect on a ConfState."""

from __future__ import annotations

import random
from collections.abc import Collection
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import msgpack

from raft_log.errors import InvalidConfChangeError
from raft_log.types import ConfState, NodeId


class ConfChangeKind(IntEnum):
    """What a membership change does to one node."""

    ADD_VOTER = 0
    ADD_LEARNER = 1
    PROMOTE = 2
    REMOVE = 3
    BIND_INCARNATION = 4  # record the incarnation of a member whose incarnation is unknown (older nodes
    # cannot decode it: proposed only when every member proved an incarnation, so runs this version)


@dataclass(frozen=True, slots=True)
class ConfChange:
    """Change the role of exactly one node (Raft's single-server change)."""

    kind: ConfChangeKind
    node: NodeId
    incarnation: str | None = None  # of the node added or bound (ADD_*, BIND_INCARNATION); None: unknown


def encode_conf_change(change: ConfChange) -> bytes:
    """The payload of a CONF_CHANGE log entry: `[kind, node]`, plus the incarnation when known."""
    fields: list[Any] = [int(change.kind), change.node]
    if change.incarnation is not None:
        fields.append(change.incarnation)
    packed: bytes = msgpack.packb(fields)
    return packed


def decode_conf_change(data: bytes) -> ConfChange:
    """Read back a payload written by `encode_conf_change` (one written before incarnations: unknown)."""
    kind, node, *incarnation = msgpack.unpackb(data)
    return ConfChange(ConfChangeKind(kind), node, *incarnation)


def apply_conf_change(conf: ConfState, change: ConfChange) -> ConfState:
    """The membership after `change`; raises `InvalidConfChangeError` if it does not fit `conf`."""
    voters, learners, node = list(conf.voters), list(conf.learners), change.node
    if change.kind is ConfChangeKind.ADD_VOTER:
        if node in voters or node in learners:
            raise InvalidConfChangeError(f"{node} is already a member (promote a learner instead)")
        voters.append(node)
    elif change.kind is ConfChangeKind.ADD_LEARNER:
        if node in voters or node in learners:
            raise InvalidConfChangeError(f"{node} is already a member")
        learners.append(node)
    elif change.kind is ConfChangeKind.PROMOTE:
        if node not in learners:
            raise InvalidConfChangeError(f"{node} is not a learner")
        learners.remove(node)
        voters.append(node)
    elif change.kind is ConfChangeKind.BIND_INCARNATION:
        if node not in voters and node not in learners:
            raise InvalidConfChangeError(f"{node} is not a member")
        if conf.incarnation_of(node) is not None:
            raise InvalidConfChangeError(f"{node}'s incarnation is already recorded")
        if change.incarnation is None:
            raise InvalidConfChangeError(f"binding {node} needs its incarnation")
    else:
        if node in voters:
            if len(voters) == 1:
                raise InvalidConfChangeError(f"{node} is the last voter")
            voters.remove(node)
        elif node in learners:
            learners.remove(node)
        else:
            raise InvalidConfChangeError(f"{node} is not a member")
    incarnations = {m: i for m, i in conf.incarnations if m != node or change.kind is ConfChangeKind.PROMOTE}
    if change.incarnation is not None and change.kind in (
        ConfChangeKind.ADD_VOTER,
        ConfChangeKind.ADD_LEARNER,
        ConfChangeKind.BIND_INCARNATION,
    ):
        incarnations[node] = change.incarnation
    return ConfState(tuple(voters), tuple(learners), tuple(sorted(incarnations.items())))


def random_conf_change(
    rng: random.Random, conf: ConfState, fresh: NodeId | None, holding: Collection[NodeId]
) -> ConfChange:
    """A membership change a simulation proposes, as nodes make them (`GroupChanges.add`): remove any
    member, promote a learner that holds the log (one of `holding`: an empty replica has no vote, so an
    empty voter could stall the group), or add a `fresh` node as a learner."""
    members = conf.voters + conf.learners
    options = [ConfChange(ConfChangeKind.REMOVE, rng.choice(members))]
    promotable = [learner for learner in conf.learners if learner in holding]
    if promotable:
        options.append(ConfChange(ConfChangeKind.PROMOTE, rng.choice(promotable)))
    if fresh is not None:
        options.append(ConfChange(ConfChangeKind.ADD_LEARNER, fresh))
    return rng.choice(options)
