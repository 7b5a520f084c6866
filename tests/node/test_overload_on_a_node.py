"""Flow control on a real node (issue 40, slice 3; docs/operate/operations.md, "Overload"): a leader
whose queue holds as many proposals not yet applied as its settings take refuses further publishes with
503 `overloaded`, naming the queue, with `Retry-After`, over HTTP and on the stream alike, and counts
them; a publish refused so was not enqueued, so retrying it with its publisher and seq enqueues it once.
The bound here is one operation (`max_unapplied_proposals`), so that a burst of publishes meets it."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from node_helpers import running_cluster
from raw_stream import publish, raw_stream

from cli.node_processes import HARNESS_HEADERS, ProcessCluster
from quorumq import Client

BURST = 100
QUEUE = "tight"


@pytest.fixture
def tight_node(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ProcessCluster]:
    """One node whose leaders hold at most one operation not yet applied per queue."""
    yield from running_cluster(tmp_path, request, 1, {"QUORUMQ_MAX_UNAPPLIED_PROPOSALS": "1"})


async def _publish(http: aiohttp.ClientSession, url: str, seq: int) -> tuple[int, dict[str, Any], str | None]:
    """The status, body and Retry-After of publish `seq` (publisher "burst", body `m<seq>`)."""
    message = {"messages": [{"body": f"m{seq}"}], "publisher": "burst", "seq": seq}
    async with http.post(f"{url}/api/queues/{QUEUE}/messages", json=message) as answer:
        return answer.status, await answer.json(), answer.headers.get("Retry-After")


async def _refused_count(http: aiohttp.ClientSession, url: str) -> float:
    async with http.get(url + "/metrics") as answer:
        text = await answer.text()
    found = re.search(rf'^quorumq_publishes_overloaded_total{{queue="{QUEUE}"}} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


async def test_a_burst_beyond_the_bound_is_refused_503_overloaded_and_its_retries_enqueue_each_once(
    tight_node: ProcessCluster,
) -> None:
    (node,) = tight_node.nodes
    async with Client([node.url], timeout=30.0) as client:
        await client.declare(QUEUE)
    async with aiohttp.ClientSession(headers=HARNESS_HEADERS) as http:
        answers = await asyncio.gather(*(_publish(http, node.url, seq) for seq in range(BURST)))
        refused = [seq for seq, (status, _, _) in enumerate(answers) if status != 201]
        assert refused, "a burst of publishes against a bound of one operation met it"
        for seq in refused:
            status, body, retry_after = answers[seq]
            assert (status, body["error"], body["queue"], retry_after) == (503, "overloaded", QUEUE, "1")
            assert QUEUE in body["reason"]
        assert await _refused_count(http, node.url) == len(refused)
        confirmed = {seq: body["ids"] for seq, (status, body, _) in enumerate(answers) if status == 201}
        for seq in refused:  # one at a time: each finds the bound free, but for a timer's Tick
            status, body, _ = await _publish(http, node.url, seq)
            while status == 503 and body["error"] == "overloaded":
                status, body, _ = await _publish(http, node.url, seq)
            assert status == 201 and not body["duplicate"], body
            confirmed[seq] = body["ids"]

        async with raw_stream(node.url) as stream:  # the stream answers the same refusal in an error frame
            for seq in range(BURST, 2 * BURST):
                await stream.send(**publish(seq, QUEUE, f"m{seq}".encode(), publisher="burst", seq=seq))
            frames = await stream.collect(lambda f: len([x for x in f if "id" in x]) == BURST)
            streamed = {frame["id"]: frame for frame in frames if "id" in frame}
            errors = [frame for frame in streamed.values() if frame["op"] == "error"]
            assert errors, "a pipelined burst on the stream met the bound too"
            for frame in errors:
                assert (frame["status"], frame["error"], frame["retry_after"]) == (503, "overloaded", 1)
            confirmed |= {seq: f["ids"] for seq, f in streamed.items() if f["op"] == "confirm"}
            for frame in errors:
                seq = frame["id"]
                answer = frame
                while answer["op"] == "error" and answer["error"] == "overloaded":
                    answer = await stream.call(
                        **publish(seq, QUEUE, f"m{seq}".encode(), publisher="burst", seq=seq)
                    )
                assert answer["op"] == "confirm" and not answer["duplicate"], answer
                confirmed[seq] = answer["ids"]

    async with Client([node.url], timeout=30.0) as client:
        got = await client.get(QUEUE, count=3 * BURST, ack="auto")
    assert sorted(m.body for m in got) == sorted(f"m{seq}".encode() for seq in range(2 * BURST))
    assert sorted(m.id for m in got) == sorted(i for ids in confirmed.values() for i in ids)
