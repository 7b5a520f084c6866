"""Publishes at the size limits, on real nodes over real TCP: a publish whose replicated operation cannot
fit the frame that carries it to the other replicas is refused 413 before it is proposed, whether made
over HTTP to a follower (which forwards it to the leader) or to the leader, or on the streaming
connection; the queue keeps committing the publishes that follow."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import msgpack
import pytest
from node_helpers import running_cluster
from raw_stream import publish, raw_stream

from cli.node_processes import HARNESS_HEADERS, ProcessCluster
from quorumq import Client

REQUEST_LIMIT = 64 << 20  # max_request_bytes, by default
MESSAGE_LIMIT = 16 << 20  # max_message_bytes, by default
ANSWER_TIMEOUT_S = 60.0  # a refusal comes at once; a publish that wedged its queue never answered


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ProcessCluster]:
    """A 3-node cluster whose followers stand only after 3 s without a leader: a node taking a 64 MiB
    body in (copies of it read, decoded and encoded on its loop) may stall for a few heartbeats on a
    loaded machine, and a leader change would answer these publishes 503 instead."""
    yield from running_cluster(tmp_path, request, 3, {"QUORUMQ_ELECTION_TICKS": "30"})


def _of_size(size: int, **fields: Any) -> bytes:
    """The msgpack map of `fields` and four messages whose bodies (bin) bring it to exactly `size` bytes."""

    def packed(lengths: list[int]) -> bytes:
        return msgpack.packb({**fields, "messages": [{"body": bytes(n)} for n in lengths]})

    lengths = [size // 4 - 1024] * 4
    short = size - len(packed(lengths))
    lengths = [n + short // 4 + (short % 4 if i == 0 else 0) for i, n in enumerate(lengths)]
    data = packed(lengths)
    assert len(data) == size and max(lengths) <= MESSAGE_LIMIT
    return data


async def _post(url: str, queue: str, body: bytes) -> tuple[int, dict[str, Any]]:
    async with (
        aiohttp.ClientSession(
            headers=HARNESS_HEADERS, timeout=aiohttp.ClientTimeout(total=ANSWER_TIMEOUT_S)
        ) as session,
        session.post(
            f"{url}/api/queues/{queue}/messages", data=body, headers={"Content-Type": "application/msgpack"}
        ) as answer,
    ):
        return answer.status, await answer.json()


async def test_rule_a_publish_whose_operation_cannot_fit_a_frame_is_413_and_the_queue_keeps_committing(
    cluster: ProcessCluster,
) -> None:
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.declare("limits", {"x-quorum-initial-group-size": 3})
        await client.publish("limits", b"before")
        leader = cluster.node((await client.queue("limits"))["leader"]).url
    follower = next(url for url in cluster.urls if url != leader)
    status, answer = await _post(follower, "limits", _of_size(REQUEST_LIMIT))  # to the leader over HTTP
    assert (status, answer["error"]) == (413, "too_large"), answer
    status, answer = await _post(leader, "limits", _of_size(REQUEST_LIMIT + 1))
    assert (status, answer["error"]) == (413, "too_large"), answer
    async with raw_stream(leader) as stream:
        await stream.ws.send_bytes(_of_size(REQUEST_LIMIT, op="publish", id=1, queue="limits"))
        refused = await stream.next(ANSWER_TIMEOUT_S)
        assert (refused["id"], refused["status"], refused["error"]) == (1, 413, "too_large"), refused
        assert (await stream.call(**publish(2, "limits", b"streamed after")))["op"] == "confirm"
    async with Client([follower], timeout=30.0) as client:
        await client.publish("limits", b"after")
        assert [m.body for m in await client.browse("limits", limit=10)] == [
            b"before",
            b"streamed after",
            b"after",
        ]
