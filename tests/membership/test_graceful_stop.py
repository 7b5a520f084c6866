"""A node told to stop (SIGTERM) hands the leadership of its queues over before it exits (issue 40), so
their publishers wait a hand-over rather than an election timeout: by the time its process has exited,
another member leads every queue it led, and nothing confirmed is lost. Real node processes."""

from __future__ import annotations

import aiohttp

from cli.node_processes import HARNESS_HEADERS, ProcessCluster
from quorumq import Client

QUEUES = [f"stop-{i}" for i in range(4)]


async def _leaders(session: aiohttp.ClientSession, url: str) -> dict[str, str | None]:
    async with session.get(f"{url}/api/queues", params={"columns": "name,leader"}) as answer:
        assert answer.status == 200, await answer.text()
        return {row["name"]: row["leader"] for row in await answer.json() if row["name"] in QUEUES}


async def test_a_stopping_node_hands_its_queues_over_before_it_exits(cluster: ProcessCluster) -> None:
    async with Client(cluster.urls) as client, aiohttp.ClientSession(headers=HARNESS_HEADERS) as session:
        for name in QUEUES:
            await client.declare(name)
            await client.publish(name, [f"{name}-m"])
            async with session.post(
                f"{cluster.urls[0]}/api/queues/{name}/leader", json={"node": "node1"}
            ) as r:
                assert r.status == 200, await r.text()
        assert set((await _leaders(session, cluster.urls[1])).values()) == {"node1"}
        cluster.nodes[0].stop()  # SIGTERM, and wait until the process has exited
        leaders = await _leaders(session, cluster.urls[1])
        assert len(leaders) == len(QUEUES) and set(leaders.values()) <= {"node2", "node3"}, leaders
        for name in QUEUES:
            assert (await client.queue(name))["messages"] == 1
    log = (cluster.nodes[0].log_path).read_text()
    assert "handed leadership over in" in log and "0 groups still led here" in log
