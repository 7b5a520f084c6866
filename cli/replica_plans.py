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

VHOST = "/"

Queue = dict[str, Any]


def majority(size: int) -> int:
    """Members needed for a quorum in a group of `size`."""
    return size // 2 + 1


def matching(queues: Iterable[Queue], pattern: str | None) -> list[Queue]:
    """Queues whose name matches the regular expression `pattern` (all when None), by name."""
    regex = re.compile(pattern) if pattern else None
    return sorted((q for q in queues if regex is None or regex.search(q["name"])), key=lambda q: q["name"])


def grow_targets(queues: Iterable[Queue], node: str, strategy: str, pattern: str | None) -> list[Queue]:
    """Queues to add `node` to: every matching queue without it (`all`), or only those with an even
    number of members (`even`, to make them odd)."""
    chosen = [q for q in matching(queues, pattern) if node not in q["members"]]
    if strategy == "even":
        chosen = [q for q in chosen if len(q["members"]) % 2 == 0]
    return chosen


def shrink_targets(queues: Iterable[Queue], node: str) -> list[Queue]:
    """Queues with a replica on `node`."""
    return [q for q in matching(queues, None) if node in q["members"]]


def leader_counts(queues: Iterable[Queue], nodes: Sequence[str]) -> dict[str, int]:
    """How many queues each of `nodes` leads."""
    counts = Counter(q.get("leader") for q in queues)
    return {node: counts[node] for node in nodes}


@dataclass(frozen=True)
class Move:
    """Hand the leadership of `queue` from `source` to `target`."""

    queue: str
    source: str
    target: str


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
            moves.append(Move(queue["name"], leader, chosen))
            counts[leader] -= 1
            counts[chosen] += 1
    return moves


def quorum_critical(queues: Iterable[Queue], node: str, up: set[str]) -> list[str]:
    """Queues that would lose their quorum if `node` stopped: it is a member, and without it fewer than
    a majority of their members would be up."""
    return [
        q["name"]
        for q in matching(queues, None)
        if node in q["members"]
        and sum(1 for m in q["members"] if m != node and m in up) < majority(len(q["members"]))
    ]


@dataclass(frozen=True)
class Addition:
    """Add a replica of `queue` on `node`."""

    queue: str
    node: str


def grow_to_count_additions(
    queues: Iterable[Queue], running: Sequence[str], count: int, pattern: str | None
) -> list[Addition]:
    """Replicas to add so that every matching queue has `count` members (or as many as there are running
    nodes), each on the running non-member that hosts the fewest replicas so far (then by name)."""
    queues = matching(queues, pattern)
    hosted = Counter(member for q in queues for member in q["members"])
    additions = []
    for queue in queues:
        members = set(queue["members"])
        while len(members) < count:
            options = [node for node in running if node not in members]
            if not options:
                break
            chosen = min(options, key=lambda node: (hosted[node], node))
            additions.append(Addition(queue["name"], chosen))
            members.add(chosen)
            hosted[chosen] += 1
    return additions
