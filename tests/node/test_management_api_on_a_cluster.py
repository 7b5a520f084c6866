"""RabbitMQ's management API, read by RabbitMQ's own client on a real 3-node cluster: `rabbitmqadmin`
(the script Debian's rabbitmq-server ships) lists queues and nodes and shows the overview; the overview's
counts and rates move as messages are published, delivered and acked; `/api/queues` pages, filters and
sorts as RabbitMQ's does, and answers under the `%2F` vhost."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import aiohttp
from node_helpers import HARNESS_HEADERS
from support.eventually import eventually

from cli.node_processes import ProcessCluster
from quorumq import Client

RABBITMQADMIN = "/usr/bin/rabbitmqadmin"
PATIENT_S = 30.0


def rabbitmqadmin(url: str, *args: str) -> list[dict[str, str]]:
    """Run rabbitmqadmin against the node at `url` (guest from loopback), its TSV read as rows."""
    host, port = url.removeprefix("http://").split(":")
    command = [RABBITMQADMIN, "-H", host, "-P", port, "-u", "guest", "-p", "guest", "-f", "tsv", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    names = header.split("\t")
    return [dict(zip(names, row.split("\t"), strict=True)) for row in rows]


async def get(session: aiohttp.ClientSession, url: str) -> Any:
    async with session.get(url, headers=HARNESS_HEADERS) as answer:
        assert answer.status == 200, await answer.text()
        return await answer.json()


async def test_rabbitmqadmin_reads_queues_nodes_and_the_overview_and_rates_move(
    cluster: ProcessCluster,
) -> None:
    url = cluster.urls[0]
    async with Client(cluster.urls, stream=False) as client, aiohttp.ClientSession() as session:
        for name in ("orders", "orders.dlq", "payments"):
            await client.declare(name)
        await client.publish("orders", [f"o{i}" for i in range(30)])
        await client.publish("payments", ["p1", "p2"])
        tag = await client.consume("orders", prefetch=10)
        delivered = await client.deliveries("orders", tag, max=10, wait=5.0)  # a POST since issue 23
        await client.ack("orders", tag, [m.id for m in delivered])
        await client.cancel("orders", tag)  # what it held since returns

        async def publishing_rate() -> dict | None:
            overview = await get(session, f"{url}/api/overview")
            stats = overview["message_stats"]
            return (
                overview
                if stats["publish_details"]["rate"] > 0 and stats["ack_details"]["rate"] > 0
                else None
            )

        overview = await eventually(
            publishing_rate, "the overview's publish and ack rates above 0", timeout=PATIENT_S, interval=0.5
        )
        assert overview["queue_totals"] == {
            "messages": 22,
            "messages_ready": 22,
            "messages_unacknowledged": 0,
        }
        assert overview["object_totals"]["queues"] == 3 and overview["object_totals"]["consumers"] == 0
        assert (overview["message_stats"]["publish"], overview["message_stats"]["deliver_get"]) == (32, 10)
        assert overview["message_stats"]["ack"] == 10
        assert sorted(listener["node"] for listener in overview["listeners"]) == ["node1", "node2", "node3"]

        queues = {row["name"]: row for row in rabbitmqadmin(url, "list", "queues")}
        assert {name: row["messages"] for name, row in queues.items()} == {
            "orders": "20",
            "orders.dlq": "0",
            "payments": "2",
        }
        in_vhost = rabbitmqadmin(url, "-V", "/", "list", "queues", "name", "messages_ready", "node")
        assert [(r["name"], r["messages_ready"]) for r in in_vhost] == [
            ("orders", "20"),
            ("orders.dlq", "0"),
            ("payments", "2"),
        ]
        nodes = rabbitmqadmin(url, "list", "nodes", "name", "type", "running", "mem_used")
        assert [(n["name"], n["type"], n["running"]) for n in nodes] == [
            ("node1", "disc", "True"),
            ("node2", "disc", "True"),
            ("node3", "disc", "True"),
        ]
        assert all(int(n["mem_used"]) > 10_000_000 for n in nodes)  # a Python process with RocksDB
        [shown] = rabbitmqadmin(url, "show", "overview")
        assert (shown["queue_totals.messages"], shown["object_totals.queues"]) == ("22", "3")

        one = await get(session, f"{url}/api/queues/%2F/orders")
        assert (one["name"], one["vhost"], one["type"], one["durable"], one["state"]) == (
            "orders",
            "/",
            "quorum",
            True,
            "running",
        )
        assert one["message_stats"]["deliver_get"] == 10


async def test_queues_page_filter_and_sort_as_rabbitmq_does(cluster: ProcessCluster) -> None:
    url = cluster.urls[1]
    async with Client(cluster.urls, stream=False) as client, aiohttp.ClientSession() as session:
        for index, name in enumerate(["a1", "a2", "a3", "b1"]):
            await client.declare(name)
            await client.publish(name, ["x"] * (index + 1))
        page = await get(
            session, f"{url}/api/queues?page=2&page_size=2&name=a&sort=messages&sort_reverse=true"
        )
        assert {key: value for key, value in page.items() if key != "items"} == {
            "page": 2,
            "page_size": 2,
            "page_count": 2,
            "filtered_count": 3,
            "item_count": 1,
            "total_count": 4,
        }
        assert [q["name"] for q in page["items"]] == ["a1"]
        regex = await get(
            session, f"{url}/api/queues?page=1&name=%5E(a2%7Cb)&use_regex=true&columns=name,messages"
        )
        assert regex["items"] == [{"name": "a2", "messages": 2}, {"name": "b1", "messages": 4}]
        async with session.get(f"{url}/api/queues?page=9", headers=HARNESS_HEADERS) as past:
            assert past.status == 400 and "past the last" in (await past.json())["reason"]
        everything = await get(session, f"{url}/api/queues?sort=name&sort_reverse=true")
        assert [q["name"] for q in everything] == ["b1", "a3", "a2", "a1"]
        node = await get(session, f"{url}/api/nodes/node3")
        assert (node["name"], node["running"], node["partitions"]) == ("node3", True, [])
        assert json.dumps(node)  # plain JSON, as the others read it
