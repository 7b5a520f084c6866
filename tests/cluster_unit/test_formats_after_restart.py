"""A leader that does not know yet what every node reads (it restarted, or a peer linked again and has not
spoken) must not write an older operation in place of a newer one whose meaning differs: a cancel, a
consumer's idle end (for a while) and a reader wait until it knows, rather than counting deliveries as
failed or registering a reader a successor would not know. Three real RaftHosts (real transports and
RocksDB)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gated_cluster import gated_cluster
from queue_doors import door_of, every_node_reads_this_version, lead, queue_replica, texts
from support.eventually import eventually

from cluster.errors import FormatsNotYetKnown


async def test_rule_a_cancel_waits_until_the_cluster_s_formats_are_known(tmp_path: Path) -> None:
    """Until b speaks again, a's cancel is 503 `formats_not_yet_known`, not a cancel written as version
    0 (which returns what the consumer held as a failed delivery); once b spoke, it is a plain return."""
    async with gated_cluster(tmp_path, queue_replica) as nodes:
        formats = every_node_reads_this_version("a")
        door = door_of(nodes["a"], formats)
        await lead(nodes, {"a": door}, "a")
        tag = await door.register_consumer(1, 0, None, None)
        await door.publish(texts("x"), None, None)
        assert [bytes(row.body) for row in await door.poll(tag, 1, 5.0)] == [b"x"]
        formats.link_lost("b")  # b linked again and has said nothing yet
        with pytest.raises(FormatsNotYetKnown):
            await door.cancel(tag)
        formats.on_control("b", formats.announcement())
        await door.cancel(tag)
        [row] = await door.get(1, auto_ack=True, since_ms=None)
        assert (bytes(row.body), row.delivery_count) == (b"x", 0)


async def test_rule_a_reader_is_not_registered_as_a_local_session_while_formats_are_not_known(
    tmp_path: Path,
) -> None:
    """A reader (`since_ms`) is registered through the log when every node reads readers; while a peer
    has not spoken it is 503 `formats_not_yet_known`, never a session only this leader knows."""
    async with gated_cluster(tmp_path, queue_replica) as nodes:
        formats = every_node_reads_this_version("a")
        door = door_of(nodes["a"], formats)
        await lead(nodes, {"a": door}, "a")
        formats.link_lost("c")
        with pytest.raises(FormatsNotYetKnown):
            await door.register_consumer(1, 0, None, 0)
        formats.on_control("c", formats.announcement())
        tag = await door.register_consumer(1, 0, None, 0)
        assert [summary.tag for summary in door.consumer_list()] == [tag]


async def test_rule_an_idle_consumer_ends_with_a_plain_return_once_formats_are_known(tmp_path: Path) -> None:
    """A consumer idle past its lease while a peer has not spoken is ended only once the peer has, with a
    plain return: the message it was offered and never polled is not counted as a failed delivery."""
    async with gated_cluster(tmp_path, queue_replica) as nodes:
        formats = every_node_reads_this_version("a")
        door = door_of(nodes["a"], formats, idle_timeout_ms=200)
        await lead(nodes, {"a": door}, "a")
        tag = await door.register_consumer(1, 0, None, None)
        await door.publish(texts("x"), None, None)
        await eventually(lambda: door.stats().messages_unacknowledged == 1, "x to be offered to the consumer")
        formats.link_lost("b")
        idle_from = door._now()
        await eventually(lambda: door._now() > idle_from + 400, "the consumer to be idle past its lease")
        door.on_timer()
        await eventually(lambda: door.stats().messages_unacknowledged == 1, "the consumer to stay")
        formats.on_control("b", formats.announcement())
        door.on_timer()
        await eventually(lambda: tag not in [s.tag for s in door.consumer_list()], "the consumer to end")
        [row] = await door.get(1, auto_ack=True, since_ms=None)
        assert (bytes(row.body), row.delivery_count) == (b"x", 0)
