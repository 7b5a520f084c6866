"""Consuming on the streaming connection (docs/use/stream-protocol.md), on real nodes over real TCP:
deliveries are pushed up to the consumer's prefetch and more as acks free its credit, nacks return
messages, a cancel or a closed connection returns what the consumer held, a consumer lives on its
queue's leader only, and a leader change ends it there so that it resumes on the new leader."""

from __future__ import annotations

from typing import Any

from raw_stream import RawStream, raw_stream
from support.eventually import eventually

from cli.node_processes import ProcessCluster
from quorumq import Client
from quorumq.auth import basic_header

WAIT_S = 20.0


def _delivered(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages of the deliver frames among `frames`."""
    return [message for frame in frames if frame["op"] == "deliver" for message in frame["messages"]]


async def _deliveries(stream: RawStream, count: int) -> list[dict[str, Any]]:
    """Read frames until `count` messages were delivered; every frame read must be a delivery."""
    frames = await stream.collect(lambda got: len(_delivered(got)) >= count)
    assert {frame["op"] for frame in frames} == {"deliver"}, frames
    return _delivered(frames)


async def _filled(url: str, queue: str, count: int, **arguments: Any) -> None:
    async with Client([url], timeout=30.0) as client:
        await client.declare(queue, arguments)
        await client.publish(queue, [b"%d" % n for n in range(count)])


async def _counts(url: str, queue: str) -> tuple[int, int, int]:
    """Ready, unacked and consumers of a queue."""
    async with Client([url], timeout=30.0) as client:
        stats = await client.queue(queue)
    return stats["messages_ready"], stats["messages_unacknowledged"], stats["consumers"]


async def _eventually_counts(url: str, queue: str, expected: tuple[int, int, int]) -> None:
    async def counts() -> bool:
        found = await _counts(url, queue)
        assert found == expected, found
        return True

    await eventually(counts, f"{queue}'s counts to be {expected}", timeout=WAIT_S, interval=0.05)


async def test_deliveries_are_pushed_up_to_the_prefetch_and_more_as_acks_free_credit(
    one_node: ProcessCluster,
) -> None:
    url = one_node.urls[0]
    await _filled(url, "credit", 20)
    async with raw_stream(url) as stream:
        ok = await stream.call(op="consume", id=1, queue="credit", prefetch=5)
        assert ok["op"] == "consume-ok", ok
        first = await _deliveries(stream, 5)
        assert [m["body"] for m in first] == [b"%d" % n for n in range(5)]
        assert await _counts(url, "credit") == (15, 5, 1)  # the node holds back the rest
        settled = await stream.call(
            op="ack", id=2, queue="credit", tag=ok["tag"], ids=[m["id"] for m in first[:2]]
        )
        assert settled == {"op": "settled", "id": 2}
        more = await _deliveries(stream, 2)
        assert [m["body"] for m in more] == [b"5", b"6"]
        assert await _counts(url, "credit") == (13, 5, 1)
        held = [m["id"] for m in first[2:] + more]
        again = await stream.call(op="ack", id=3, queue="credit", tag=ok["tag"], ids=held + held[:1])
        assert again["op"] == "settled", again


async def test_nacked_messages_return_or_are_dropped(one_node: ProcessCluster) -> None:
    url = one_node.urls[0]
    await _filled(url, "nacks", 2)
    async with raw_stream(url) as stream:
        tag = (await stream.call(op="consume", id=1, queue="nacks", prefetch=2))["tag"]
        first, _ = await _deliveries(stream, 2)
        returned = await stream.call(op="nack", id=2, queue="nacks", tag=tag, ids=[first["id"]])
        assert returned == {"op": "settled", "id": 2}
        (again,) = await _deliveries(stream, 1)
        assert (again["id"], again["redelivered"], again["delivery_count"]) == (first["id"], True, 1)
        dropped = await stream.call(op="nack", id=3, queue="nacks", tag=tag, ids=[again["id"]], requeue=False)
        assert dropped["op"] == "settled", dropped
        assert await _counts(url, "nacks") == (0, 1, 1)


async def test_a_cancel_or_a_closed_connection_returns_what_the_consumer_held(
    one_node: ProcessCluster,
) -> None:
    url = one_node.urls[0]
    await _filled(url, "returned", 10)
    async with raw_stream(url) as stream:
        tag = (await stream.call(op="consume", id=1, queue="returned", prefetch=3))["tag"]
        await _deliveries(stream, 3)
        cancelled = await stream.call(op="cancel", id=2, queue="returned", tag=tag)
        assert cancelled == {"op": "cancelled", "id": 2, "tag": tag, "reason": "cancelled"}
        assert await _counts(url, "returned") == (10, 0, 0)
        await stream.call(op="consume", id=3, queue="returned", prefetch=4)
        await _deliveries(stream, 4)
        assert await _counts(url, "returned") == (6, 4, 1)
    await _eventually_counts(url, "returned", (10, 0, 0))  # the connection closed: its consumer is gone
    async with Client([url]) as client:
        got = await client.get("returned", count=10, ack="auto")
    # plain returns, no failure: the 3 the cancel returned (served first: the default delivery limit puts
    # returns at the head) were taken again with one more and returned with the connection's close
    assert [m.delivery_count for m in got] == [0] * 10
    assert sorted(m.acquired_count for m in got) == [0] * 6 + [1] + [2] * 3


async def test_a_consumer_is_refused_off_the_leader_with_a_hint_and_without_read_permission(
    cluster: ProcessCluster,
) -> None:
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.declare("placed", {"x-quorum-initial-group-size": 3})
        await client.publish("placed", b"x")
        leader = (await client.queue("placed"))["leader"]
        await client.put_user("reader", password="a long enough password", tags=[])
        await client.set_permissions("reader", write="placed")
    follower = next(node for node in cluster.nodes if node.name != leader)
    async with raw_stream(follower.url) as stream:
        refused = await stream.call(op="consume", id=1, queue="placed")
    assert (refused["status"], refused["error"], refused["leader"]) == (503, "no_leader", leader), refused
    assert refused["leader_http"] == cluster.node(leader).url
    reader = {"Authorization": basic_header("reader", "a long enough password")}
    async with raw_stream(cluster.node(leader).url, reader) as stream:
        forbidden = await stream.call(op="consume", id=1, queue="placed")
    assert (forbidden["status"], forbidden["error"]) == (403, "forbidden"), forbidden


async def test_a_leader_change_ends_the_consumer_here_and_it_resumes_on_the_new_leader(
    cluster: ProcessCluster,
) -> None:
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.declare("moving", {"x-quorum-initial-group-size": 3})
        await client.publish("moving", [b"%d" % n for n in range(10)])
        leader = (await client.queue("moving"))["leader"]
    successor = next(node for node in cluster.nodes if node.name != leader)
    async with raw_stream(cluster.node(leader).url) as stream:
        tag = (await stream.call(op="consume", id=1, queue="moving", prefetch=5))["tag"]
        held = await _deliveries(stream, 5)
        async with Client(cluster.urls, timeout=30.0) as client:
            await client.transfer_leader("moving", successor.name)
        ended = await stream.next()
    assert ended == {
        "op": "cancelled",
        "tag": tag,
        "reason": "leader_moved",
        "leader": successor.name,
        "leader_http": successor.url,
    }
    async with raw_stream(successor.url) as stream:
        resumed = await stream.call(op="consume", id=1, queue="moving", tag=tag, prefetch=5)
        assert resumed == {"op": "consume-ok", "id": 1, "tag": tag, "hold_ms": 30 * 60 * 1000}
        again = await _deliveries(stream, 5)  # what it held, delivered again by the new leader
        assert sorted(m["id"] for m in again) == sorted(m["id"] for m in held)
        acked = await stream.call(op="ack", id=2, queue="moving", tag=tag, ids=[m["id"] for m in again])
        assert acked["op"] == "settled", acked
        rest = await _deliveries(stream, 5)
        assert sorted(m["body"] for m in rest) == [b"%d" % n for n in range(5, 10)]
        unknown = await stream.call(op="consume", id=3, queue="moving", tag="no-such-consumer")
        assert (unknown["status"], unknown["error"]) == (404, "not_found"), unknown
