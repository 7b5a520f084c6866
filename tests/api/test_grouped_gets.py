"""A get from a time on a queue with message groups, on a real in-process node: its `max_bytes` is sized
in the order the queue takes such a get's messages (review finding on ordered message groups)."""

from __future__ import annotations

from pathlib import Path

from in_process_node import in_process_node


async def test_rule_a_get_from_a_time_fits_max_bytes_in_the_order_it_takes(tmp_path: Path) -> None:
    """A get from a time takes a grouped queue's ungrouped messages before its groups' heads; its fit
    read them in hand-out order (heads and ungrouped merged by id), so two 1-byte heads made room for two
    messages and the get took the 100-byte ungrouped one with a head: 101 bytes for `max_bytes` 2."""
    async with in_process_node(tmp_path) as node:
        await node.declare("grouped", {"x-message-groups": True})
        messages = [{"body": "a", "group": "a"}, {"body": "b", "group": "b"}, {"body": "c" * 100}]
        status, body = await node.call("POST", "/api/queues/grouped/messages", json={"messages": messages})
        assert status == 201, body
        status, got = await node.call(
            "POST", "/api/queues/grouped/get", json={"count": 2, "since": 0, "max_bytes": 2}
        )
        assert status == 200, got
        assert [row["body"] for row in got] == ["c" * 100]  # the first it takes, alone: at least one
