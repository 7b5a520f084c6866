"""Hostile bytes cost a node little (W5): a stream frame or a request body built to be expensive to
decode (millions of empty containers in a few MiB) is refused within a bounded piece of work, whoever
sends it, so the node's event loop keeps answering and its memory does not balloon.

The loop's lag is measured as an attacker's victims see it (`security_helpers.loop_lag`); an unbounded
decode of 4 MiB blocks for seconds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

import aiohttp
import msgpack
import pytest
from security_helpers import ADMIN, MAX_LAG_S, add_user, call, loop_lag, peak_rss, stream_reply

from cli.node_processes import NodeProcess, ProcessCluster
from quorumq.auth import basic_header

NOBODY = basic_header("nobody", "nobody-pw")  # a user with no permission on any queue
HOSTILE_BYTES = 4 * 1024 * 1024
MAX_PEAK_GROWTH_BYTES = 128 * 1024 * 1024
T = TypeVar("T")


def empty_lists(size: int) -> bytes:
    """A msgpack map whose `op` is about `size` bytes of empty arrays: one Python list per byte."""
    return msgpack.packb({"op": [[]] * (size - 16)})


@pytest.fixture(scope="module")
def nobody(secured: ProcessCluster) -> ProcessCluster:
    asyncio.run(add_user(secured.urls, "nobody", "nobody-pw", {"configure": "", "write": "", "read": ""}))
    return secured


async def served_without_stalling(node: NodeProcess, attack: Awaitable[T]) -> T:
    """What `attack` against `node` gives; the node's loop never lagged beyond MAX_LAG_S meanwhile,
    its peak memory grew by less than MAX_PEAK_GROWTH_BYTES, and it still answers."""
    peak = peak_rss(node)
    async with loop_lag(node.url) as worst:
        result = await attack
    assert worst[0] < MAX_LAG_S, f"the event loop lagged {worst[0]:.2f} s"
    grown = peak_rss(node) - peak
    assert grown < MAX_PEAK_GROWTH_BYTES, f"peak memory grew {grown / 2**20:.0f} MiB"
    assert (await call("GET", node.url + "/api/health")).status == 200
    return result


async def stream_answer(url: str, frame: bytes, *, hello: bool) -> dict[str, object]:
    """Send `frame` on a stream of user nobody (after a hello when `hello`), return the node's answer."""
    message = await stream_reply(url, NOBODY, frame, hello=hello)
    assert message.type is aiohttp.WSMsgType.BINARY, message
    answer = msgpack.unpackb(message.data)
    assert isinstance(answer, dict)
    return answer


@pytest.mark.parametrize("hello", [False, True], ids=["before-hello", "after-hello"])
async def test_w5_a_hostile_stream_frame_does_not_stall_the_node(nobody: ProcessCluster, hello: bool) -> None:
    node = nobody.nodes[0]
    answer = await served_without_stalling(
        node, stream_answer(node.url, empty_lists(HOSTILE_BYTES), hello=hello)
    )
    assert answer["op"] == "error" and answer["status"] in (400, 413), answer


async def test_w5_a_hostile_json_body_does_not_stall_the_node(nobody: ProcessCluster) -> None:
    assert (await call("PUT", nobody.urls[0] + "/api/queues/hostile", authorization=ADMIN)).status == 201
    body = b'{"count": [' + b"[]," * (2 * HOSTILE_BYTES // 3) + b"[]]}"
    attack = call(
        "POST",
        nobody.urls[0] + "/api/tokens",
        authorization=NOBODY,
        data=body,
        headers={"Content-Type": "application/json"},
    )
    answer = await served_without_stalling(nobody.nodes[0], attack)
    assert answer.status in (400, 413), answer


async def test_w5_a_deeply_nested_json_body_is_a_400(nobody: ProcessCluster) -> None:
    body = b"[" * 100_000 + b"]" * 100_000
    answer = await call(
        "POST",
        nobody.urls[0] + "/api/tokens",
        authorization=NOBODY,
        data=body,
        headers={"Content-Type": "application/json"},
    )
    assert answer.status in (400, 413), answer


async def test_w5_a_body_beyond_the_control_limit_is_413_and_a_publish_keeps_its_limit(
    nobody: ProcessCluster,
) -> None:
    url = nobody.urls[2] + "/api/queues/hostile-limits"
    assert (await call("PUT", url, authorization=ADMIN)).status == 201
    large = {"count": 1, "pad": "x" * (1024 * 1024)}
    assert (await call("POST", url + "/get", authorization=ADMIN, json=large)).status == 413

    async def chunked() -> AsyncIterator[bytes]:
        yield b'{"count": 1, "pad": "'
        for _ in range(2 * 1024):
            yield b"x" * 1024
        yield b'"}'

    streamed = await call(
        "POST",
        url + "/get",
        authorization=ADMIN,
        data=chunked(),
        headers={"Content-Type": "application/json"},
    )
    assert streamed.status == 413, streamed
    published = await call(
        "POST", url + "/messages", authorization=ADMIN, json={"messages": [{"body": "y" * (2 * 1024 * 1024)}]}
    )
    assert published.status == 201, published.body
