"""A leader's timer ends a consumer through the log; when that end does not commit (the leader could not
propose it), the same leader decides again later. Three real RaftHosts (real transports and RocksDB)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gated_cluster import GROUP, gated_cluster
from queue_doors import NAMES, door_of, lead, queue_replica, texts
from support.eventually import eventually

from cluster.queues import consumer_sessions
from cluster.replication.format_versions import FormatVersions


async def test_rule_an_end_that_did_not_commit_is_decided_again_by_the_same_leader(tmp_path: Path) -> None:
    """a hands leadership to b, which cannot catch up (it is cut off), so a drops proposals until
    the hand-over times out and a leads on. The idle end a's timer proposed meanwhile is dropped: a must
    end the consumer again, not forget it (what it holds would stay held while a leads)."""
    async with gated_cluster(tmp_path, queue_replica, election_ticks=20) as nodes:  # hand-overs end in 1 s
        door = door_of(nodes["a"], idle_timeout_ms=200)
        await lead(nodes, {"a": door}, "a")
        await door.register_consumer(1, 0, None, None)
        await door.publish(texts("x"), None, None)
        await eventually(lambda: door.stats().messages_unacknowledged == 1, "x to be offered to the consumer")
        await nodes["b"].transport.stop()
        await door.publish(texts("y"), None, None)  # committed by a and c; b is behind
        nodes["a"].host.transfer_leadership(GROUP, "b")
        idle_from = door._now()
        await eventually(lambda: door._now() > idle_from + 400, "the consumer to be idle past its lease")
        door.on_timer()  # its end is dropped: leadership is being handed over

        def ended() -> bool:
            door.on_timer()
            return door.stats().consumers == 0

        await eventually(ended, "the consumer to end once the hand-over timed out")
        assert door.is_leader
        rows = await door.get(2, auto_ack=True, since_ms=None)
        assert sorted((bytes(row.body), row.delivery_count) for row in rows) == [(b"x", 0), (b"y", 0)]


async def test_rule_an_idle_consumer_ends_while_a_node_has_not_said_what_it_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Node d joined and died before it said which queue operations it reads (and nobody forgot it yet):
    the idle end cannot be a plain return, which d may not read, yet it must not wait for d, or what the
    consumer holds stays held for as long as d is down (whole-node seed 769). After a short grace it
    ends as a consumer that went down, which every version reads."""
    monkeypatch.setattr(consumer_sessions, "UNKNOWN_FORMATS_GRACE_MS", 600)
    async with gated_cluster(tmp_path, queue_replica) as nodes:
        formats = FormatVersions("a", lambda: (*NAMES, "d"), lambda _: True)
        for peer in NAMES:
            formats.on_control(peer, formats.announcement())
        door = door_of(nodes["a"], formats, idle_timeout_ms=200)
        await lead(nodes, {"a": door}, "a")
        await door.register_consumer(1, 0, None, None)
        await door.publish(texts("x"), None, None)
        await eventually(lambda: door.stats().messages_unacknowledged == 1, "x to be offered to the consumer")
        idle_from = door._now()
        await eventually(lambda: door._now() > idle_from + 300, "the consumer to be idle past its lease")
        door.on_timer()  # overdue, but d may yet say: it waits
        assert door.stats().consumers == 1

        def ended() -> bool:
            door.on_timer()
            return door.stats().consumers == 0 and door.stats().messages_ready == 1

        await eventually(ended, "the idle consumer to end and x to return")
        [row] = await door.get(1, auto_ack=True, since_ms=None)
        assert (bytes(row.body), row.delivery_count) == (b"x", 1)  # gone down: a failed delivery
