"""What a peer said it reads belongs to the peer as it was linked when it said so (issue 37, finding 8;
docs/decisions/0018-format-announcements-per-link.md).

A real in-process node n1 and a peer b: a bare transport standing for b's process, a learner of the
metadata group (so a member of the cluster whose word counts). When b's process stops and b links again
(a restart, a rollback to a version that says nothing of queue operations), what it said before no
longer counts until it speaks again; while it is away, its last word stands. A feature whose version is
not known to be read everywhere yet (a member has not spoken since it linked, or since n1 started) is
answered 503 `formats_not_yet_known` with `Retry-After`, not 409: it is not refused, it is not known yet.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import msgpack
import pytest
from in_process_node import InProcessNode, in_process_node
from support.eventually import eventually

from cli.node_processes import free_ports
from cluster.config import Address
from cluster.membership.group_changes import GroupChanges
from cluster.replication.entry_codec import HOLDING_OP_VERSION, QUEUE_OP_VERSION
from cluster.replication.transport import KIND_CONTROL, Transport
from metadata_state.codec import CODEC_VERSION

SECRET = "in-process-test-secret"


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[InProcessNode]:
    """n1, with b a learner of its metadata group (never linked yet)."""
    async with in_process_node(tmp_path) as node:
        host = node.node.host
        assert host is not None
        changes = GroupChanges(host, node.node.status.is_up)
        await changes.change("meta", changes.new_learner("b"))
        yield node


class Peer:
    """b's process: a transport linked with n1, saying what it reads when told to."""

    def __init__(self, n1: InProcessNode, address: Address) -> None:
        self.n1 = n1
        self.transport = Transport("b", address, SECRET, lambda *_: None)
        self.transport.set_peer("n1", n1.node.config.raft_address)

    async def start(self) -> None:
        await self.transport.start()
        await eventually(
            lambda: self.transport.linked("n1") and self.n1.node.transport.linked("b"), "b linked"
        )

    def say(self, control: dict[str, int]) -> None:
        assert self.transport.send("n1", "", KIND_CONTROL, msgpack.packb(control))

    async def stop(self) -> None:
        await self.transport.stop()
        await eventually(lambda: not self.n1.node.transport.linked("b"), "b's link lost")


async def test_rule_a_peer_linked_again_counts_as_reading_nothing_until_it_says_again(
    running: InProcessNode,
) -> None:
    formats = running.node.formats
    address = Address("127.0.0.1", free_ports(1)[0])
    running.node.transport.set_peer("b", address)
    b = Peer(running, address)
    await b.start()
    b.say({"queue_codec": QUEUE_OP_VERSION, "metadata_codec": CODEC_VERSION})
    await eventually(lambda: formats.writes_queue_ops() == QUEUE_OP_VERSION, "b's word heard")

    await b.stop()  # b's process stops: while it is away, what it said stands
    assert (formats.writes_queue_ops(), formats.writes_metadata()) == (QUEUE_OP_VERSION, CODEC_VERSION)

    b = Peer(running, address)  # b's next process, of a version that says nothing of queue operations
    await b.start()
    try:
        assert (formats.writes_queue_ops(), formats.writes_metadata()) == (0, 0)
        b.say({"metadata_codec": 1})
        await eventually(lambda: formats.writes_metadata() == 1, "b's new word heard")
        assert formats.writes_queue_ops() == 0
    finally:
        await b.stop()


async def test_rule_a_feature_not_yet_known_to_be_read_everywhere_is_503_with_retry_after(
    running: InProcessNode,
) -> None:
    """b has not spoken since n1 started: a touch is answered 503 and Retry-After, then 409 once b says
    it reads an older version, then 200 once it says it reads this one."""
    door = await running.declare("f-touch")
    tag = await door.register_consumer(prefetch=1, priority=0, timeout_ms=None, since_ms=None)
    status, _ = await running.call("POST", "/api/queues/f-touch/messages", json={"messages": [{"body": "m"}]})
    assert status == 201
    (row,) = await door.poll(tag, 1, 5.0)
    touch = f"/api/queues/f-touch/consumers/{tag}/touch"

    async with running.http.request("POST", touch, json={"ids": [row.id]}) as answer:
        body = await answer.json()
        assert (answer.status, body["error"], answer.headers.get("Retry-After")) == (
            503,
            "formats_not_yet_known",
            "1",
        )

    address = Address("127.0.0.1", free_ports(1)[0])
    running.node.transport.set_peer("b", address)
    b = Peer(running, address)
    await b.start()
    try:
        b.say({"queue_codec": HOLDING_OP_VERSION - 1, "metadata_codec": CODEC_VERSION})
        await eventually(
            lambda: running.node.formats.queue_operations.reads("b") is not None, "b's word heard"
        )
        status, body = await running.call("POST", touch, json={"ids": [row.id]})
        assert (status, body["error"]) == (409, "upgrade_in_progress")
        b.say({"queue_codec": QUEUE_OP_VERSION, "metadata_codec": CODEC_VERSION})
        await eventually(
            lambda: running.node.formats.writes_queue_ops() == QUEUE_OP_VERSION, "b's new word heard"
        )
        status, _ = await running.call("POST", touch, json={"ids": [row.id]})
        assert status == 200
    finally:
        await b.stop()
