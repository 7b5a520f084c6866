"""The queue handlers in-process over a real `QueueDoor`: they parse, call the door once and map its
typed results and refusals to the HTTP contract (statuses, error codes, bodies)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import msgpack
import pytest
import pytest_asyncio
from in_process_node import InProcessNode, in_process_node

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[InProcessNode]:
    """One in-process node for the module; each test declares queues of its own."""
    async with in_process_node(Path(tmp_path_factory.mktemp("handlers"))) as running:
        yield running


async def publish(api: InProcessNode, queue: str, *bodies: str, **fields: object) -> dict:
    status, answer = await api.call(
        "POST", f"/api/queues/{queue}/messages", json={"messages": [{"body": b} for b in bodies], **fields}
    )
    assert status == 201, answer
    return answer


async def test_publish_answers_201_with_ids_and_a_retried_seq_is_the_same_ids_marked_duplicate(
    api: InProcessNode,
) -> None:
    await api.declare("h-publish")
    first = await publish(api, "h-publish", "a", "b", publisher="p", seq=1)
    again = await publish(api, "h-publish", "a", "b", publisher="p", seq=1)
    assert first == {"ids": [1, 2], "duplicate": False}
    assert again == {"ids": [1, 2], "duplicate": True}
    status, queue = await api.call("GET", "/api/queues/h-publish")
    assert status == 200 and queue["messages"] == 2 and queue["next_id"] == 3


async def test_get_holds_manual_messages_until_acked_and_auto_ack_settles_at_once(api: InProcessNode) -> None:
    await api.declare("h-get")
    await publish(api, "h-get", "one", "two")
    status, rows = await api.call("POST", "/api/queues/h-get/get", json={"count": 1})
    assert status == 200
    assert [(r["id"], r["body"], r["redelivered"]) for r in rows] == [(1, "one", False)]
    assert rows[0]["published_at"] > 0 and rows[0]["encoding"] == "utf8"
    assert (await api.call("POST", "/api/queues/h-get/ack", json={"ids": [1]})) == (200, {"ok": True})
    status, rows = await api.call("POST", "/api/queues/h-get/get", json={"count": 5, "ack": "auto"})
    assert [r["body"] for r in rows] == ["two"]
    _, queue = await api.call("GET", "/api/queues/h-get")
    assert queue["messages"] == 0


async def test_a_long_poll_waits_for_a_publish_and_returns_it(api: InProcessNode) -> None:
    await api.declare("h-poll")
    status, registered = await api.call("POST", "/api/queues/h-poll/consumers", json={"prefetch": 10})
    assert status == 201
    tag = registered["consumer"]
    started = time.monotonic()
    assert await api.call("GET", f"/api/queues/h-poll/consumers/{tag}/deliveries?wait=0.5") == (200, [])
    assert time.monotonic() - started >= 0.5  # an empty queue's poll waited its whole wait
    poll = asyncio.ensure_future(api.call("GET", f"/api/queues/h-poll/consumers/{tag}/deliveries?wait=30"))
    await publish(api, "h-poll", "late")
    status, rows = await asyncio.wait_for(poll, 30)
    assert status == 200 and [r["body"] for r in rows] == ["late"]


async def test_a_nack_requeues_with_a_delivery_count_and_a_repeated_ack_is_ok_with_a_warning(
    api: InProcessNode,
) -> None:
    await api.declare("h-settle")
    _, registered = await api.call("POST", "/api/queues/h-settle/consumers", json={"prefetch": 1})
    base = f"/api/queues/h-settle/consumers/{registered['consumer']}"
    await publish(api, "h-settle", "m")
    _, rows = await api.call("GET", base + "/deliveries?wait=5")
    assert (await api.call("POST", base + "/nack", json={"ids": [rows[0]["id"]]})) == (200, {"ok": True})
    _, rows = await api.call("GET", base + "/deliveries?wait=5")
    assert rows[0]["redelivered"] and rows[0]["headers"] == {"x-acquired-count": 1, "x-delivery-count": 1}
    assert (await api.call("POST", base + "/ack", json={"ids": [1]})) == (200, {"ok": True})
    status, answer = await api.call("POST", base + "/ack", json={"ids": [1]})
    assert status == 200 and answer["ok"] is True and "1" in answer["warning"]
    assert (await api.call("DELETE", base))[0] == 204


async def test_a_nack_with_failed_false_is_a_plain_return_counted_as_acquired_only(
    api: InProcessNode,
) -> None:
    await api.declare("h-plain", {"x-delivery-limit": 0})
    _, registered = await api.call("POST", "/api/queues/h-plain/consumers", json={"prefetch": 1})
    base = f"/api/queues/h-plain/consumers/{registered['consumer']}"
    await publish(api, "h-plain", "m")
    for attempt in range(1, 4):  # limit 0: a single failed return would dead-letter it
        _, rows = await api.call("GET", base + "/deliveries?wait=5")
        assert await api.call("POST", base + "/nack", json={"ids": [1], "failed": False}) == (
            200,
            {"ok": True},
        )
        _, rows = await api.call("GET", base + "/deliveries?wait=5")
        assert (rows[0]["delivery_count"], rows[0]["acquired_count"], rows[0]["redelivered"]) == (
            0,
            attempt,
            True,
        )
        assert rows[0]["headers"] == {"x-acquired-count": attempt}
    assert (await api.call("DELETE", base))[0] == 204


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ({"ids": [1], "failed": "no"}, "failed"),
        ({"ids": [1], "requeue": False, "reason": 7}, "reason"),
        ({"ids": [1], "requeue": False, "reason": "x" * 257}, "256"),
        ({"ids": [1], "reason": "why"}, "requeue"),  # a reason goes with a reject, not a return
    ],
)
async def test_a_bad_nack_option_is_a_400_naming_it(api: InProcessNode, body: dict, names: str) -> None:
    await api.declare("h-nack-options")
    status, error = await api.call("POST", "/api/queues/h-nack-options/nack", json=body)
    assert (status, error["error"]) == (400, "bad_request") and names in error["reason"]


async def test_a_queue_declared_without_a_delivery_limit_gets_20_and_minus_1_is_unlimited(
    api: InProcessNode,
) -> None:
    await api.declare("h-default-limit")
    status, queue = await api.call("GET", "/api/queues/h-default-limit")
    assert status == 200 and queue["arguments"]["x-delivery-limit"] == 20
    assert (await api.call("PUT", "/api/queues/h-default-limit", json={"arguments": {}}))[0] == 204
    await api.declare("h-unlimited", {"x-delivery-limit": -1})
    _, queue = await api.call("GET", "/api/queues/h-unlimited")
    assert queue["arguments"]["x-delivery-limit"] == -1
    status, error = await api.call(
        "PUT", "/api/queues/h-bad-limit", json={"arguments": {"x-delivery-limit": -2}}
    )
    assert status == 400 and "x-delivery-limit" in error["reason"]


async def test_a_durable_consumer_checks_out_reads_its_log_again_and_settles_below(
    api: InProcessNode,
) -> None:
    await api.declare("h-durable")
    await publish(api, "h-durable", "x", "yy", "zzz")
    body = {"durable": True, "name": "spark"}
    status, position = await api.call("POST", "/api/queues/h-durable/consumers", json=body)
    assert (status, position) == (201, {"consumer": "spark", "settled": 0, "end": 0, "bytes": 0})
    base = "/api/queues/h-durable/consumers/spark"
    status, position = await api.call("POST", base + "/checkout", json={"max": 2})
    assert (status, position) == (200, {"consumer": "spark", "settled": 0, "end": 2, "bytes": 3})
    status, rows = await api.call("GET", base + "/log?from=0&to=2")
    assert status == 200 and [(r["seq"], r["body"]) for r in rows] == [(0, "x"), (1, "yy")]
    status, position = await api.call("POST", base + "/settle", json={"below": 2})
    assert (status, position) == (200, {"consumer": "spark", "settled": 2, "end": 2, "bytes": 0})
    status, error = await api.call("GET", base + "/log?from=0&to=2")
    assert status == 409 and error["error"] == "log_gap"
    status, error = await api.call("POST", base + "/settle", json={"below": 5})
    assert status == 409 and error["error"] == "beyond_sequence"
    assert (await api.call("DELETE", base))[0] == 204
    status, error = await api.call("GET", base + "/log?from=0&to=1")
    assert (status, error["error"]) == (404, "not_found")


async def test_update_arguments_changes_runtime_ones_and_refuses_the_others_with_400(
    api: InProcessNode,
) -> None:
    await api.declare("h-update")
    status, queue = await api.call("PATCH", "/api/queues/h-update", json={"arguments": {"x-max-length": 5}})
    assert status == 200 and queue["arguments"]["x-max-length"] == 5
    changes = {"x-single-active-consumer": True}
    status, error = await api.call("PATCH", "/api/queues/h-update", json={"arguments": changes})
    assert (status, error["error"]) == (400, "bad_request")
    assert "cannot be changed at runtime" in error["reason"]
    status, error = await api.call(
        "PATCH", "/api/queues/h-update", json={"arguments": {"x-max-length": "ten"}}
    )
    assert (status, error["error"]) == (400, "bad_request") and "x-max-length" in error["reason"]
    status, queue = await api.call(
        "PATCH", "/api/queues/h-update", json={"arguments": {"x-max-length": None}}
    )
    assert status == 200 and "x-max-length" not in queue["arguments"]


@pytest.mark.parametrize(
    ("method", "suffix", "body", "status", "code"),
    [
        ("GET", "/consumers/ghost/deliveries", None, 404, "not_found"),
        ("POST", "/consumers/ghost/ack", {"ids": [1]}, 404, "not_found"),
        ("DELETE", "/consumers/ghost", None, 404, "not_found"),
        ("POST", "/consumers/ghost/settle", {"below": 1}, 404, "unknown_consumer"),
        ("POST", "/messages", {"messages": [{"body": "a"}], "publisher": "", "seq": 1}, 400, "bad_request"),
        ("POST", "/messages", {"messages": [{"body": "a"}]}, 507, "reject-publish"),
        ("DELETE", "?if_empty=true", None, 409, "conflict"),
    ],
)
async def test_refusals_of_the_queue_map_to_their_status_and_code(
    api: InProcessNode, method: str, suffix: str, body: dict | None, status: int, code: str
) -> None:
    leader = await api.declare("h-refusals", {"x-max-length": 1, "x-overflow": "reject-publish"})
    if not leader.stats().messages:
        await publish(api, "h-refusals", "keep")  # full, and not empty
    got, error = await api.call(method, "/api/queues/h-refusals" + suffix, json=body)
    assert (got, error["error"]) == (status, code), error
    assert error["reason"]
    assert leader.stats().messages == 1


async def test_a_name_held_by_an_ordinary_consumer_is_refused_to_a_durable_checkout_with_409_name_in_use(
    api: InProcessNode,
) -> None:
    await api.declare("h-names")
    _, consumer = await api.call("POST", "/api/queues/h-names/consumers", json={})
    path = f"/api/queues/h-names/consumers/{consumer['consumer']}/checkout"
    status, error = await api.call("POST", path, json={"max": 1})
    assert (status, error["error"]) == (409, "name_in_use")


async def test_a_guarded_delete_of_an_empty_unused_queue_deletes_it(api: InProcessNode) -> None:
    await api.declare("h-guarded")
    assert (await api.call("DELETE", "/api/queues/h-guarded?if_empty=true&if_unused=true"))[0] == 204
    assert "h-guarded" not in api.node.metadata.queues
    status, error = await api.call("GET", "/api/queues/h-guarded")
    assert (status, error["error"]) == (404, "not_found")


async def test_peek_answers_the_message_at_a_position_in_delivery_order_and_moves_nothing(
    api: InProcessNode,
) -> None:
    await api.declare("h-peek", {"x-delivery-limit": -1})  # unlimited: a return goes to the tail
    await publish(api, "h-peek", "one", "two", "three")
    _, [got] = await api.call("POST", "/api/queues/h-peek/get", json={"count": 1})
    await api.call("POST", "/api/queues/h-peek/nack", json={"ids": [got["id"]]})  # "one" to the tail
    status, row = await api.call("GET", "/api/queues/h-peek/messages/peek?position=3")
    assert status == 200
    assert (row["id"], row["body"], row["encoding"], row["redelivered"]) == (1, "one", "utf8", True)
    assert row["headers"] == {"x-acquired-count": 1, "x-delivery-count": 1} and row["published_at"] > 0
    status, row = await api.call("GET", "/api/queues/h-peek/messages/peek?position=1")
    assert (status, row["body"]) == (200, "two")
    async with api.http.get(
        "/api/queues/h-peek/messages/peek?position=2", headers={"Accept": "application/msgpack"}
    ) as answer:
        packed = msgpack.unpackb(await answer.read())
    assert (packed["id"], packed["body"], packed["encoding"]) == (3, b"three", "utf8")
    _, queue = await api.call("GET", "/api/queues/h-peek")
    assert (queue["messages_ready"], queue["messages_unacknowledged"]) == (3, 0)


async def test_peek_past_the_end_is_404_no_message_and_a_bad_position_400(api: InProcessNode) -> None:
    await api.declare("h-peek-end")
    await publish(api, "h-peek-end", "only")
    status, answer = await api.call("GET", "/api/queues/h-peek-end/messages/peek?position=2")
    assert (status, answer["error"]) == (404, "no_message")
    for query in ("position=0", "position=x", "position=-1", ""):
        status, answer = await api.call("GET", f"/api/queues/h-peek-end/messages/peek?{query}")
        assert (status, answer["error"]) == (400, "bad_request"), query
    status, answer = await api.call("GET", "/api/queues/h-nowhere/messages/peek?position=1")
    assert (status, answer["error"]) == (404, "not_found")
