"""Choosing a new queue's replica set and preferred leader, and the node a growing group adds (decided by
the proposer, not in apply)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable

from metadata_state.records import QueueInfo

DEFAULT_GROUP_SIZE = 3


def place_replicas(
    nodes: Iterable[str],
    queues: Iterable[QueueInfo],
    *,
    size: int | None,
    locator: str | None,
    client_node: str | None,
    host_of: Callable[[str], str],
    registered: Collection[str],
) -> list[str]:
    """Members for a new queue, preferred leader first.

    Only `registered` nodes (whose registration names their database, so the declaration records it)
    are placed on while there are enough of them: a joined node declared on before it registered
    cannot tell that it is the member meant, and waits to be added (`QueueHosting`), which with one more
    member lost leaves the new group without a majority. `client-local` (the default) puts the node
    the client talked to first (when it is among the candidates); `balanced` picks the node leading the
    fewest queues. Each other member is the next `next_replica`: on a host the queue does not use yet
    when there is one (several nodes may run on one host), then holding the fewest replicas.
    """
    candidates = sorted(nodes)
    if not candidates:
        return []
    queues = list(queues)
    replicas = replica_counts(queues)
    leaders = Counter(q.members[0] for q in queues if q.members)
    wanted = min(size or DEFAULT_GROUP_SIZE, len(candidates))
    known = [n for n in candidates if n in registered]
    if len(known) >= wanted:
        candidates = known
    if locator != "balanced" and client_node in candidates:
        first = client_node
    else:
        first = min(candidates, key=lambda n: (leaders[n], replicas[n], n))
    members = [first]
    while len(members) < wanted:
        rest = [n for n in candidates if n not in members]
        members.append(next_replica(rest, members, replicas, host_of))
    return members


def replica_counts(queues: Iterable[QueueInfo]) -> Counter[str]:
    """How many queue replicas each node holds."""
    return Counter(member for q in queues for member in q.members)


def next_replica(
    candidates: Iterable[str], members: Iterable[str], replicas: Counter[str], host_of: Callable[[str], str]
) -> str:
    """The candidate to add to a queue with `members`: one on a host none of them runs on when there is
    one, then the one holding the fewest replicas, then by name. `candidates` must not be empty."""
    used = {host_of(m) for m in members}
    return min(candidates, key=lambda n: (host_of(n) in used, replicas[n], n))
