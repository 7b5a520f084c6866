"""The cluster view in-process: health, the node list, metrics and the queue list read the node's status,
metadata and queue directory (the parts the app factory hands over)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from in_process_node import InProcessNode, in_process_node

from cluster.entry_codec import QUEUE_OP_VERSION
from cluster.metadata.codec import CODEC_VERSION

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
    assert health == {
        "node": "n1",
        "status": "ok",
        "metadata_leader": "n1",
        "groups_hosted": 2,
        "groups_led": 2,
        "groups_without_leader": [],
        "groups_repairing": [],
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
    assert 'quorumq_queue_messages{queue="c-depth",state="ready"} 2.0' in lines
    assert 'quorumq_queue_consumers{queue="c-depth"} 0.0' in lines
    assert {"quorumq_raft_groups 2.0", "quorumq_raft_groups_led 2.0"} <= lines
    assert "quorumq_store_check_done 1.0" in lines


async def test_the_queue_list_answers_for_each_declared_queue_from_its_local_replica(
    api: InProcessNode,
) -> None:
    status, queues = await api.call("GET", "/api/queues")
    assert status == 200
    assert [(q["name"], q["leader"], q["online"], q["messages"]) for q in queues] == [
        ("c-depth", "n1", ["n1"], 2)
    ]
