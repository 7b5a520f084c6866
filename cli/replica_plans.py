"""What `quorumq-queues` grow, shrink, rebalance and the quorum-critical check decide, from queue listings.

Pure functions over the `GET /api/queues` rows (`name`, `leader`, `members`), so they are tested
without a cluster; the commands carry the decisions out through the HTTP API.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_VHOST = "/"

Queue = dict[str, Any]
"""A row of `GET /api/queues`: `vhost`, `name`, `leader`, `members`."""


def vhost_of(queue: Queue) -> str:
    """The vhost of a listed queue (`/` from a node that lists none)."""
    return str(queue.get("vhost", DEFAULT_VHOST))


def majority(size: int) -> int:
    """Members needed for a quorum in a group of `size`."""
    return size // 2 + 1


def matching(queues: Iterable[Queue], pattern: str | None, vhost_pattern: str | None = None) -> list[Queue]:
    """Queues whose name matches the regular expression `pattern` and whose vhost `vhost_pattern` (all
    when None), by vhost and name."""
    names = re.compile(pattern) if pattern else None
    vhosts = re.compile(vhost_pattern) if vhost_pattern else None
    return sorted(
        (
            q
            for q in queues
            if (names is None or names.search(q["name"])) and (vhosts is None or vhosts.search(vhost_of(q)))
        ),
        key=lambda q: (vhost_of(q) != DEFAULT_VHOST, vhost_of(q), q["name"]),
    )


def grow_targets(
    queues: Iterable[Queue], node: str, strategy: str, pattern: str | None, vhost_pattern: str | None = None
) -> list[Queue]:
    """Queues to add `node` to: every matching queue without it (`all`), or only those with an even
    number of members (`even`, to make them odd)."""
    chosen = [q for q in matching(queues, pattern, vhost_pattern) if node not in q["members"]]
    if strategy == "even":
        chosen = [q for q in chosen if len(q["members"]) % 2 == 0]
    return chosen


def shrink_targets(queues: Iterable[Queue], node: str, vhost_pattern: str | None = None) -> list[Queue]:
    """Queues (of the vhosts `vhost_pattern` matches) with a replica on `node`."""
    return [q for q in matching(queues, None, vhost_pattern) if node in q["members"]]


def leader_counts(queues: Iterable[Queue], nodes: Sequence[str]) -> dict[str, int]:
    """How many queues each of `nodes` leads."""
    counts = Counter(q.get("leader") for q in queues)
    return {node: counts[node] for node in nodes}


@dataclass(frozen=True)
class Move:
    """Hand the leadership of `queue` (of `vhost`) from `source` to `target`."""

    queue: str
    source: str
    target: str
    vhost: str = DEFAULT_VHOST


def rebalance_moves(queues: Iterable[Queue], running: Sequence[str]) -> list[Move]:
    """Leadership transfers that bring every running node to at most ceil(queues / running nodes)
    leaders, moving each queue only to one of its own members."""
    queues = list(queues)
    if not queues or not running:
        return []
    target = math.ceil(len(queues) / len(running))
    counts = leader_counts(queues, running)
    moves = []
    for queue in queues:
        leader = queue.get("leader")
        if leader not in counts or counts[leader] <= target:
            continue
        options = [m for m in queue["members"] if m in counts and m != leader and counts[m] < target]
        if options:
            chosen = min(options, key=lambda n: (counts[n], n))
            moves.append(Move(queue["name"], leader, chosen, vhost_of(queue)))
            counts[leader] -= 1
            counts[chosen] += 1
    return moves


def quorum_critical(queues: Iterable[Queue], node: str, up: set[str]) -> list[tuple[str, str]]:
    """The vhosts and names of the queues that would lose their quorum if `node` stopped: it is a member,
    and without it fewer than a majority of their members would be up."""
    return [
        (vhost_of(q), q["name"])
        for q in matching(queues, None)
        if node in q["members"]
        and sum(1 for m in q["members"] if m != node and m in up) < majority(len(q["members"]))
    ]


@dataclass(frozen=True)
class Addition:
    """Add a replica of `queue` (of `vhost`) on `node`."""

    queue: str
    node: str
    vhost: str = DEFAULT_VHOST


def grow_to_count_additions(
    queues: Iterable[Queue],
    running: Sequence[str],
    count: int,
    pattern: str | None,
    vhost_pattern: str | None = None,
) -> list[Addition]:
    """Replicas to add so that every matching queue has `count` members (or as many as there are running
    nodes), each on the running non-member that hosts the fewest replicas so far (then by name)."""
    queues = matching(queues, pattern, vhost_pattern)
    hosted = Counter(member for q in queues for member in q["members"])
    additions = []
    for queue in queues:
        members = set(queue["members"])
        while len(members) < count:
            options = [node for node in running if node not in members]
            if not options:
                break
            chosen = min(options, key=lambda node: (hosted[node], node))
            additions.append(Addition(queue["name"], chosen, vhost_of(queue)))
            members.add(chosen)
            hosted[chosen] += 1
    return additions
