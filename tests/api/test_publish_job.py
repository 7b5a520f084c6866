"""A publish body read into a `PublishJob`: a `not_before` becomes a delay on the node's own clock (the
one its environment gives, virtual in the whole-node simulation), never the process's wall clock."""

from __future__ import annotations

from pathlib import Path

from api.publish_job import publish_of
from cluster.config import Address, NodeConfig

NODE_NOW_MS = 1_000_000  # far in the past of any real wall clock


def test_rule_a_not_before_is_measured_on_the_nodes_clock(tmp_path: Path) -> None:
    config = NodeConfig("a", tmp_path, Address("a", 8080), Address("a", 7000))
    body = {"messages": [{"body": "x", "not_before": NODE_NOW_MS + 5_000}, {"body": "y"}]}
    job = publish_of(body, config, NODE_NOW_MS)
    assert job.delays == [5_000, None]
