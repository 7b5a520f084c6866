"""How often quorumq's Raft groups changed leader: each node's `quorumq_raft_leader_changes_total` (it
started or stopped leading a group), summed over the nodes. In an idle, healthy cluster it stands still."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from quorumq import Client

COUNTER = "quorumq_raft_leader_changes_total"


async def leader_changes(urls: list[str]) -> int:
    """The counter summed over the nodes at `urls`, each asked alone."""
    total = 0.0
    for url in urls:
        async with Client([url], timeout=300.0) as client:  # /metrics of 10,000 groups is slow
            text = await client.metrics_text()
        for family in text_string_to_metric_families(text):
            total += sum(sample.value for sample in family.samples if sample.name == COUNTER)
    return int(total)
