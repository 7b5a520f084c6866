"""A real one-node cluster in this test's process: a `Node` on a temporary data directory serving the
HTTP application, so handlers and `QueueDoor`s are tested without subprocesses and without fakes."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from support.eventually import eventually

from api.app import create_app
from cli.node_processes import free_ports
from cluster.config import Address, NodeConfig
from cluster.node import Node
from cluster.queues.queue_door import QueueDoor
from quorumq.auth import basic_header

GUEST = {"Authorization": basic_header("guest", "guest")}  # full rights from loopback


class InProcessNode:
    """The node and an HTTP client of its API (as the loopback guest)."""

    def __init__(self, node: Node, http: TestClient) -> None:
        self.node = node
        self.http = http

    async def call(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        """The status and the JSON (or text) answer of one request."""
        async with self.http.request(method, path, **kwargs) as answer:
            if answer.content_type == "application/json":
                return answer.status, await answer.json()
            return answer.status, await answer.text()

    async def declare(self, name: str, arguments: dict[str, Any] | None = None) -> QueueDoor:
        """Declare a queue and return its door once this node leads it."""
        status, body = await self.call("PUT", f"/api/queues/{name}", json={"arguments": arguments or {}})
        assert status in (201, 204), body
        await eventually(lambda: name in self.node.queues and self.node.queues[name].is_leader, f"{name} led")
        return self.node.directory.leading_door(name)


@contextlib.asynccontextmanager
async def in_process_node(data_dir: Path, **settings: Any) -> AsyncIterator[InProcessNode]:
    """A started one-node cluster whose metadata is ready (users initialised), and its API client;
    `settings` override `NodeConfig` fields."""
    http_port, raft_port = free_ports(2)
    config = NodeConfig(
        "n1",
        data_dir,
        Address("127.0.0.1", http_port),
        Address("127.0.0.1", raft_port),
        cluster_secret="in-process-test-secret",
        tick_ms=20,
        **({"consumer_timeout_ms": 60_000} | settings),
    )
    node = Node(config)
    await node.start()
    http = TestClient(TestServer(create_app(node), host="127.0.0.1", port=http_port), headers=GUEST)
    await http.start_server()
    node.check_store()  # as `api.app.serve` does once HTTP listens
    try:
        await eventually(lambda: node.status.readiness() == "ok", "the metadata to be ready")
        await eventually(lambda: node.status.store_check.done, "the store check")
        yield InProcessNode(node, http)
    finally:
        await http.close()
        await node.stop()
