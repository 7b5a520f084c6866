"""Permission patterns already stored in the metadata before the API checked them with RE2 (as an older
node, or the log it replays, holds them), on a real in-process node: one RE2 refuses grants nothing."""

from __future__ import annotations

from pathlib import Path

from in_process_node import in_process_node

from metadata_state.replies import Ok
from quorumq.auth import basic_header

LOOKAHEAD = "(?=orders).*"  # Python's re matches "orders" with it; RE2 refuses lookaround


async def test_a_pattern_stored_before_the_re2_check_that_re2_refuses_grants_nothing(tmp_path: Path) -> None:
    async with in_process_node(tmp_path) as node:
        await node.declare("orders")
        status, body = await node.call("PUT", "/api/users/legacy", json={"password": "legacy-password"})
        assert status == 201, body
        status, body = await node.call("PUT", "/api/users/legacy/permissions", json={"write": LOOKAHEAD})
        assert status == 400, body  # refused when set today, so stored as before the check:
        reply = await node.node.metadata_door.set_permissions("legacy", "", LOOKAHEAD, "orders")
        assert isinstance(reply, Ok), reply
        legacy = {"Authorization": basic_header("legacy", "legacy-password")}
        publish = {"messages": [{"body": "m"}]}
        status, body = await node.call("POST", "/api/queues/orders/messages", json=publish, headers=legacy)
        assert status == 403 and body["error"] == "forbidden", body
        status, body = await node.call("POST", "/api/queues/orders/get", json={}, headers=legacy)
        assert status == 200, body  # the user's valid pattern still grants
        reply = await node.node.metadata_door.set_permissions("legacy", "", "orders", "orders")
        assert isinstance(reply, Ok), reply
        status, body = await node.call("POST", "/api/queues/orders/messages", json=publish, headers=legacy)
        assert status == 201, body  # set again, RE2-valid: granted
