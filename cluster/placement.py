"""Choosing a new queue's replica set and preferred leader (decided by the proposer, not in apply)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from cluster.metadata.records import QueueInfo

DEFAULT_GROUP_SIZE = 3


def place_replicas(
    nodes: Iterable[str],
    queues: Iterable[QueueInfo],
    *,
    size: int | None,
    locator: str | None,
    client_node: str | None,
) -> list[str]:
    """Members for a new queue, preferred leader first.

    `client-local` (the default) puts the node the client talked to first; `balanced` picks the node
    leading the fewest queues. The other members are the nodes holding the fewest replicas.
    """
    candidates = sorted(nodes)
    if not candidates:
        return []
    queues = list(queues)
    replicas = Counter(member for q in queues for member in q.members)
    leaders = Counter(q.members[0] for q in queues if q.members)
    wanted = min(size or DEFAULT_GROUP_SIZE, len(candidates))
    if locator != "balanced" and client_node in candidates:
        first = client_node
    else:
        first = min(candidates, key=lambda n: (leaders[n], replicas[n], n))
    rest = sorted((n for n in candidates if n != first), key=lambda n: (replicas[n], n))
    return [first, *rest[: wanted - 1]]
