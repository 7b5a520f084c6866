"""The cluster view in-process: health, the node list, metrics and the queue list read the node's status,
metadata and queue directory (the parts the app factory hands over); the Grafana dashboard in docs/
queries only series a node exports."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from in_process_node import InProcessNode, in_process_node
from prometheus_client.parser import text_string_to_metric_families

from api.app_keys import METRICS
from cluster.replication.entry_codec import QUEUE_OP_VERSION
from metadata_state.codec import CODEC_VERSION

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[InProcessNode]:
    """One in-process node for the module, with one queue holding two messages."""
    async with in_process_node(Path(tmp_path_factory.mktemp("cluster"))) as running:
        await running.declare("c-depth")
        messages = {"messages": [{"body": "a"}, {"body": "b"}]}
        status, _ = await running.call("POST", "/api/queues/c-depth/messages", json=messages)
        assert status == 201
        yield running


async def test_health_of_a_ready_node_counts_its_groups_and_queues(api: InProcessNode) -> None:
    status, health = await api.call("GET", "/api/health")
    assert status == 200
    check = health.pop("store_check")
    assert check["done"] is True and check["checked_bytes"] > 0, check
    assert 0 <= health.pop("groups_quiet") <= 2  # a group goes quiet once idle
    assert health == {
        "node": "n1",
        "status": "ok",
        "metadata_leader": "n1",
        "groups_hosted": 2,
        "groups_led": 2,
        "groups_without_leader": [],
        "groups_repairing": [],
        "groups_halted": [],
        "queues": 1,
        "damage": None,
        "formats": {  # no other node to wait for
            "queue_operations": {"reads": QUEUE_OP_VERSION, "writes": QUEUE_OP_VERSION},
            "metadata": {"reads": CODEC_VERSION, "writes": CODEC_VERSION},
        },
    }


async def test_the_node_list_shows_this_node_up_with_its_addresses(api: InProcessNode) -> None:
    status, nodes = await api.call("GET", "/api/nodes")
    config = api.node.config
    assert status == 200
    assert [(n["name"], n["http"], n["raft"], n["status"]) for n in nodes] == [
        ("n1", config.http_url, str(config.raft_address), "up")
    ]


async def test_metrics_show_the_depth_of_led_queues_and_the_raft_groups(api: InProcessNode) -> None:
    status, text = await api.call("GET", "/metrics")
    assert status == 200
    lines = set(text.splitlines())
    assert 'rabbitmq_detailed_queue_messages_ready{queue="c-depth"} 2.0' in lines
    assert 'rabbitmq_detailed_queue_consumers{queue="c-depth"} 0.0' in lines
    assert 'quorumq_queue_messages{queue="c-depth",state="delayed"} 0.0' in lines
    assert {"quorumq_raft_groups 2.0", "quorumq_raft_groups_led 2.0"} <= lines
    assert "quorumq_store_check_done 1.0" in lines
    assert "# TYPE quorumq_raft_leader_changes_total counter" in lines  # it only grows
    commits = [
        line
        for line in lines
        if line.startswith("rabbitmq_detailed_raft_log_commit_index{") and 'queue="c-depth"' in line
    ]
    assert len(commits) == 1 and float(commits[0].rsplit(" ", 1)[1]) >= 1
    for family in ("process_resident_memory_bytes", "python_info", "quorumq_fsync_seconds_bucket"):
        assert any(line.startswith(family) for line in lines), family
    assert any(line.startswith("rabbitmq_raft_entry_commit_latency_seconds_count") for line in lines)


async def test_the_queue_list_answers_for_each_declared_queue_from_its_local_replica(
    api: InProcessNode,
) -> None:
    status, queues = await api.call("GET", "/api/queues")
    assert status == 200
    assert [(q["name"], q["leader"], q["online"], q["messages"]) for q in queues] == [
        ("c-depth", "n1", ["n1"], 2)
    ]


DASHBOARD = Path(__file__).parents[2] / "docs" / "grafana" / "quorumq-dashboard.json"
SERIES = re.compile(r"\b(?:rabbitmq|quorumq|process|python)_[a-zA-Z0-9_:]*")


async def test_every_series_the_grafana_dashboard_queries_is_one_the_node_exports(api: InProcessNode) -> None:
    status, text = await api.call("GET", "/metrics")
    assert status == 200
    exported: set[str] = set()
    for family in text_string_to_metric_families(text):
        suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}.get(
            family.type, ("",)
        )
        exported |= {family.name + suffix for suffix in suffixes}
    dashboard = json.loads(DASHBOARD.read_text())
    queried = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in SERIES.findall(target["expr"])
    }
    assert len(dashboard["panels"]) >= 15 and len(queried) >= 15
    assert queried - exported == set()


async def test_a_scrape_lets_the_loop_run_while_its_series_are_formatted(api: InProcessNode) -> None:
    """At 10,000 queues formatting takes about a second: done on the loop, it held the node's beats
    past the time its peers take to deem it silent."""
    metrics = api.http.app[METRICS]
    other = asyncio.ensure_future(asyncio.sleep(0))
    payload = await metrics.exposition(None)
    assert other.done()  # the loop ran it while the scrape was formatted
    assert b"quorumq_raft_groups_quiet" in payload
