"""Publishing on the streaming connection (docs/use/stream-protocol.md), on real nodes over real TCP: each
pipelined publish is confirmed with the ids of its own messages, only once a majority has them; bad
frames and refused publishes get error frames and the connection carries on; publishes whose answers a
closed connection lost were enqueued once, as a resend shows."""

from __future__ import annotations

import signal
from pathlib import Path

import aiohttp
import msgpack
import pytest
from raw_stream import publish, raw_stream

from cli.node_processes import ProcessCluster, wait_healthy
from quorumq import Client
from quorumq.auth import basic_header

PIPELINED = 200


async def _declared(cluster: ProcessCluster, queue: str) -> tuple[str, list[str]]:
    """Declare a queue on three replicas; its leader's URL and the others'."""
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.declare(queue, {"x-quorum-initial-group-size": 3})
        await client.publish(queue, b"warm-up")  # the group has a leader and its links are up
        leader = (await client.queue(queue))["leader"]
    return cluster.node(leader).url, [node.url for node in cluster.nodes if node.name != leader]


async def _bodies(url: str, queue: str) -> dict[int, bytes]:
    """Every message the queue holds, by id."""
    async with Client([url], timeout=30.0) as client:
        return {message.id: message.body for message in await client.browse(queue, limit=10000)}


async def test_pipelined_publishes_are_each_confirmed_with_the_ids_of_their_own_messages(
    cluster: ProcessCluster,
) -> None:
    leader, (follower, _) = await _declared(cluster, "pipelined")
    sent: dict[int, list[bytes]] = {}
    async with raw_stream(follower) as stream:  # through the peer transport to the leader
        for request in range(PIPELINED):
            sent[request] = [f"{request}-{k}".encode() for k in range(1 + request % 3)]
            await stream.send(**publish(request, "pipelined", *sent[request], publisher="pp", seq=request))
        answers = await stream.collect(lambda frames: len(frames) == PIPELINED)
    assert {a["op"] for a in answers} == {"confirm"}, [a for a in answers if a["op"] != "confirm"][:3]
    assert sorted(a["id"] for a in answers) == list(range(PIPELINED))  # each once, none invented
    stored = await _bodies(leader, "pipelined")
    assert {a["id"]: [stored[i] for i in a["ids"]] for a in answers} == sent
    assert len(stored) == 1 + sum(
        len(bodies) for bodies in sent.values()
    )  # nothing but those (and the warm-up)


@pytest.mark.faults
async def test_a_publish_is_not_confirmed_while_a_majority_is_frozen_and_once_after(
    cluster: ProcessCluster,
) -> None:
    leader, followers = await _declared(cluster, "majority")
    frozen = [node for node in cluster.nodes if node.url in followers]
    async with raw_stream(leader) as stream:
        for node in frozen:
            node.signal(signal.SIGSTOP)
        try:
            await stream.send(**publish(1, "majority", b"held", publisher="pm", seq=1))
            answer = await stream.next(timeout=30.0)  # the leader gives up within two election timeouts
        finally:
            for node in frozen:
                node.signal(signal.SIGCONT)
        assert (answer["op"], answer["id"], answer["status"], answer["error"]) == (
            "error",
            1,
            503,
            "outcome_unknown",
        ), answer
    wait_healthy(cluster.nodes)
    async with Client(cluster.urls, timeout=30.0) as client:
        new_leader = (await client.queue("majority"))["leader"]
    async with raw_stream(cluster.node(new_leader).url) as stream:
        resent = await stream.call(**publish(2, "majority", b"held", publisher="pm", seq=1))
        assert resent["op"] == "confirm", resent
    stored = await _bodies(cluster.node(new_leader).url, "majority")
    assert [stored[i] for i in resent["ids"]] == [b"held"]
    assert sorted(stored.values()) == [b"held", b"warm-up"]  # enqueued once, whether before or now


async def test_publishes_in_flight_when_the_connection_closes_finish_on_the_node(
    cluster: ProcessCluster,
) -> None:
    leader, _ = await _declared(cluster, "abandoned")
    async with raw_stream(leader) as stream:
        for request in range(PIPELINED):
            await stream.send(**publish(request, "abandoned", b"%d" % request, publisher="pa", seq=request))
    async with raw_stream(leader) as stream:  # the client resends what it saw no confirm for
        for request in range(PIPELINED):
            await stream.send(**publish(request, "abandoned", b"%d" % request, publisher="pa", seq=request))
        answers = await stream.collect(lambda frames: len(frames) == PIPELINED)
    assert {a["op"] for a in answers} == {"confirm"}, answers[:3]
    stored = await _bodies(leader, "abandoned")
    assert sorted(stored.values()) == sorted([b"warm-up", *(b"%d" % r for r in range(PIPELINED))])


async def test_bad_frames_get_error_frames_and_the_connection_carries_on(one_node: ProcessCluster) -> None:
    url = one_node.urls[0]
    async with Client([url]) as client:
        await client.declare("bad-frames")
    async with raw_stream(url, hello=False) as stream:
        early = await stream.call(**publish(1, "bad-frames", b"too early"))
        assert (early["status"], early["error"]) == (400, "hello_first"), early
        hello = await stream.call(op="hello", versions=[1, 99])
        assert (hello["op"], hello["version"]) == ("hello", 1), hello
        await stream.ws.send_bytes(b"\xc1")  # not msgpack
        await stream.ws.send_str("text")
        await stream.ws.send_bytes(msgpack.packb([1, 2]))  # not a map
        for refused in await stream.collect(lambda frames: len(frames) == 3):
            assert (refused["op"], refused["id"], refused["status"]) == ("error", None, 400), refused
        for frame in (
            {"op": "frobnicate", "id": 2},
            {"op": "publish", "id": 3, "queue": "bad-frames", "messages": []},
            {"op": "publish", "id": 4, "queue": "bad-frames", "messages": [{"body": 5}]},
            {"op": "publish", "id": 5, "queue": 7, "messages": [{"body": b"x"}]},
            {"op": "publish", "id": 6, "queue": "no such/queue", "messages": [{"body": b"x"}]},
            {"op": "publish", "id": 7, "queue": "bad-frames", "messages": [{"body": b"x"}], "extra": 1},
            {"op": "publish", "id": 8, "queue": "bad-frames", "messages": [{"body": b"x"}], "seq": 1},
            {"op": "consume", "id": 9, "queue": "bad-frames", "prefetch": 0},
            {"op": "ack", "id": 10, "queue": "bad-frames", "tag": "t", "ids": ["one"]},
        ):
            refused = await stream.call(**frame)
            assert (refused["op"], refused["status"], refused["error"]) == ("error", 400, "bad_request"), (
                refused
            )
        await stream.send(op="publish", queue="bad-frames", messages=[{"body": b"x"}])  # no id
        assert (await stream.next())["status"] == 400
        missing = await stream.call(**publish(11, "missing-queue", b"x"))
        assert (missing["status"], missing["error"]) == (404, "not_found"), missing
        confirmed = await stream.call(**publish(12, "bad-frames", b"after all that"))
        assert confirmed["op"] == "confirm", confirmed
    assert list((await _bodies(url, "bad-frames")).values()) == [b"after all that"]


async def test_a_frame_over_the_request_limit_is_refused_with_its_id_and_the_connection_stays(
    tmp_path: Path,
) -> None:
    limit = 64 * 1024
    cluster = ProcessCluster.start(tmp_path, count=1, env={"QUORUMQ_MAX_REQUEST_BYTES": str(limit)})
    try:
        url = cluster.urls[0]
        async with Client([url]) as client:
            await client.declare("limited")
        async with raw_stream(url) as stream:
            refused = await stream.call(**publish(1, "limited", bytes(limit)))
            assert (refused["status"], refused["error"]) == (413, "too_large"), refused
            assert (await stream.call(**publish(2, "limited", b"small")))["op"] == "confirm"
            await stream.send(**publish(3, "limited", bytes(3 * limit)))  # beyond what the node reads
            closing = await stream.ws.receive(timeout=20)
            assert (closing.type, closing.data) == (
                aiohttp.WSMsgType.CLOSE,
                aiohttp.WSCloseCode.MESSAGE_TOO_BIG,
            )
        assert list((await _bodies(url, "limited")).values()) == [b"small"]
    finally:
        cluster.stop()


async def test_a_publish_without_write_permission_on_its_queue_is_refused_and_others_go_on(
    one_node: ProcessCluster,
) -> None:
    url = one_node.urls[0]
    async with Client([url]) as admin:
        for queue in ("mine-1", "theirs"):
            await admin.declare(queue)
        await admin.put_user("writer", password="a long enough password", tags=[])
        await admin.set_permissions("writer", write="mine-.*", read="mine-.*")
    headers = {"Authorization": basic_header("writer", "a long enough password")}
    async with raw_stream(url, headers) as stream:
        refused = await stream.call(**publish(1, "theirs", b"no"))
        assert (refused["status"], refused["error"]) == (403, "forbidden"), refused
        assert (await stream.call(**publish(2, "mine-1", b"yes")))["op"] == "confirm"
        async with Client([url]) as admin:  # revoked while the connection is open: the next one is refused
            await admin.set_permissions("writer", read="mine-.*")
        revoked = await stream.call(**publish(3, "mine-1", b"no more"))
        assert (revoked["status"], revoked["error"]) == (403, "forbidden"), revoked
    assert list((await _bodies(url, "mine-1")).values()) == [b"yes"]
    assert await _bodies(url, "theirs") == {}
    async with aiohttp.ClientSession() as session:  # the upgrade itself needs valid credentials
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused_upgrade:
            await session.ws_connect(
                url + "/api/stream", headers={"Authorization": basic_header("writer", "x")}
            )
    assert refused_upgrade.value.status == 401
