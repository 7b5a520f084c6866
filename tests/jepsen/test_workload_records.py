"""What the workload records for answers a real cluster rarely gives, against a tiny in-test node."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import msgpack
from aiohttp import web
from aiohttp.test_utils import TestServer

from jepsen_tests.checker import check_total_queue
from jepsen_tests.history import HistoryWriter, Op, read_history
from jepsen_tests.workload import GROUPS, Workload, WorkloadConfig


async def _run_until(
    tmp_path: Path, app: web.Application, config: WorkloadConfig, done: asyncio.Event
) -> list[Op]:
    """Run the workload of `config` against `app`, its one node, until `done` is set; the ops it recorded
    (in a history file of its own under `tmp_path`)."""
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    history = HistoryWriter(tmp_path / f"history-{len(list(tmp_path.iterdir()))}.jsonl")
    workload = Workload([str(server.make_url("")).rstrip("/")], history, config, random.Random(1))
    stop = asyncio.Event()
    running = asyncio.create_task(workload.run(stop))
    try:
        await asyncio.wait_for(done.wait(), 10)
    finally:
        stop.set()
        await running
        await server.close()
        history.close()
    return read_history(history.path)


async def test_a_confirm_with_fewer_ids_than_messages_is_recorded_as_a_protocol_error(tmp_path: Path) -> None:
    answered = asyncio.Event()

    async def short(request: web.Request) -> web.Response:
        answered.set()
        return web.json_response({"ids": []}, status=201)

    app = web.Application()
    app.router.add_post("/api/queues/{q}/messages", short)
    ops = await _run_until(tmp_path, app, WorkloadConfig(("q",), 1, 0), answered)
    confirms = [(op.type, op.error) for op in ops if op.f == "enqueue" and op.type != "invoke"]
    assert confirms and set(confirms) == {("ok", "short_ids")}
    verdict = check_total_queue(ops)
    assert verdict.protocol_errors == sorted(op.value for op in ops if op.type == "ok")
    assert not verdict.valid


async def _consume_against(
    tmp_path: Path,
    config: WorkloadConfig,
    touch_status: int = 200,
    answers: tuple[tuple[tuple[int, str | None], ...], ...] = (((1, None), (2, None), (3, None)),),
) -> tuple[list[Op], dict[str, list]]:
    """Run the consumers of `config` against a node whose polls answer `answers` in turn, one each (value
    and group per delivery), then nothing; it answers every settle, and touches with `touch_status`. The
    ops recorded and the bodies sent, once a settle came after the last answer."""
    sent: dict[str, list] = {"nack": [], "touch": [], "ack": []}
    waiting = list(answers)
    settled = asyncio.Event()

    async def consume(request: web.Request) -> web.Response:
        return web.json_response({"consumer": "t", "hold_ms": 5000}, status=201)

    async def deliveries(request: web.Request) -> web.Response:
        if not waiting:
            await asyncio.sleep(0.05)  # a long poll that finds nothing
            return web.json_response([])
        rows = [
            {
                "id": value,
                "body": str(value),
                "encoding": "utf8",
                "headers": {"x-group-id": group} if group else {},
            }
            for value, group in waiting.pop(0)
        ]
        return web.json_response(rows)

    async def settle(request: web.Request) -> web.Response:
        verb = request.match_info["verb"]
        sent[verb].append(await request.json())
        if verb == "touch":
            return web.json_response({"hold_ms": 5000}, status=touch_status)
        if not waiting:
            settled.set()
        return web.json_response({})

    async def cancel(request: web.Request) -> web.Response:
        return web.json_response({})

    app = web.Application()
    app.router.add_post("/api/queues/{q}/consumers", consume)
    app.router.add_post("/api/queues/{q}/consumers/{tag}/deliveries", deliveries)
    app.router.add_post("/api/queues/{q}/consumers/{tag}/{verb}", settle)
    app.router.add_delete("/api/queues/{q}/consumers/{tag}", cancel)
    return await _run_until(tmp_path, app, config, settled), sent


async def test_a_consumer_nacks_with_a_delay_and_touches_and_counts_only_what_was_taken(
    tmp_path: Path,
) -> None:
    nacking = WorkloadConfig(("q",), 0, 1, nack_probability=1.0, nack_delays_ms=(300,), cancel_probability=0)
    ops, sent = await _consume_against(tmp_path, nacking, 200)
    assert sent["nack"] == [{"ids": [1, 2, 3], "requeue": True, "delay": 300}]
    assert [(op.type, op.detail) for op in ops if op.type == "fail"] == [("fail", "delay=300")] * 3
    touching = WorkloadConfig(
        ("q",), 0, 1, nack_probability=0, reject_probability=0, cancel_probability=0, touch_probability=1.0
    )
    ops, sent = await _consume_against(tmp_path, touching, 200)
    assert sent["touch"] == [{"ids": [1, 2, 3]}] and sent["ack"] == [{"ids": [1, 2, 3]}]
    assert check_total_queue(ops).exercised == {"touched before the ack": 3}
    ops, sent = await _consume_against(tmp_path, touching, 404)  # refused: acked, not counted as touched
    assert sent["ack"] == [{"ids": [1, 2, 3]}]
    assert check_total_queue(ops).exercised == {}


async def test_a_fanned_publish_carries_the_routing_revision_and_a_confirm_short_of_a_queue_is_an_error(
    tmp_path: Path,
) -> None:
    """The publisher declares the exchange and binds both queues, then publishes through it with the
    routing revision the answers named; a confirm naming one queue of the two is a protocol error."""
    calls: list[tuple[str, str | None]] = []
    answered = asyncio.Event()
    revision = {"X-Quorumq-Routing-Revision": "7"}

    async def declare(request: web.Request) -> web.Response:
        calls.append((f"declare {request.match_info['name']}", (await request.json())["type"]))
        return web.Response(status=204, headers=revision)

    async def bind(request: web.Request) -> web.Response:
        calls.append((f"bind {request.match_info['q']}", None))
        return web.json_response({}, status=201, headers=revision)

    async def publish(request: web.Request) -> web.Response:
        calls.append(("publish", request.headers.get("X-Quorumq-Routing-Revision")))
        routed = {"fan-a": {"ids": [len(calls)], "duplicate": False}}
        if len(calls) == 4:  # the first: both queues
            routed["fan-b"] = {"ids": [len(calls)], "duplicate": False}
        else:
            answered.set()
        return web.json_response({"routed": routed}, status=201)

    app = web.Application()
    app.router.add_put("/api/exchanges/{vhost}/{name}", declare)
    app.router.add_post("/api/bindings/{vhost}/e/{name}/q/{q}", bind)
    app.router.add_post("/api/exchanges/{vhost}/{name}/publish", publish)
    ops = await _run_until(tmp_path, app, WorkloadConfig(("q",), 1, 0, fanout_probability=1.0), answered)
    assert calls[:5] == [
        ("declare jepsen-fanout", "fanout"),
        ("bind fan-a", None),
        ("bind fan-b", None),
        ("publish", "7"),
        ("publish", "7"),
    ]
    confirms = [(op.type, op.queue, op.error, op.detail) for op in ops if op.type != "invoke"]
    assert confirms[:2] == [
        ("ok", "jepsen-fanout", None, "fanout=fan-a,fan-b"),
        ("ok", "jepsen-fanout", "short_routed", "fanout=fan-a,fan-b"),
    ]
    verdict = check_total_queue(ops)
    assert verdict.protocol_errors == [op.value for op in ops if op.error == "short_routed"]
    assert verdict.exercised["published through a fanout exchange"] == len(confirms)


async def test_a_grouped_publish_names_its_group_on_the_wire_and_in_its_detail(tmp_path: Path) -> None:
    published: list[dict] = []
    answered = asyncio.Event()

    async def publish(request: web.Request) -> web.Response:
        published.extend(msgpack.unpackb(await request.read())["messages"])
        if len(published) == 5:
            answered.set()
        return web.json_response({"ids": [len(published)]}, status=201)

    app = web.Application()
    app.router.add_post("/api/queues/{q}/messages", publish)
    ops = await _run_until(tmp_path, app, WorkloadConfig(("q",), 1, 0, groups_probability=1.0), answered)
    publishes = [op for op in ops if op.f == "enqueue" and op.type == "invoke"]
    assert {op.queue for op in publishes} == {"grp"}
    wire = [(message["group"], message.get("priority", 0)) for message in published]
    assert [(op.facts["group"], int(op.facts.get("priority", 0))) for op in publishes[: len(wire)]] == wire
    assert {group for group, _ in wire} <= set(GROUPS)
    verdict = check_total_queue(ops)
    assert verdict.exercised["published in a group"] == sum(
        op.type == "ok" for op in ops if op.f == "enqueue"
    )


async def test_the_grouped_queues_consumers_record_each_delivery_with_its_batch_and_group(
    tmp_path: Path,
) -> None:
    """So that the checker sees two values of a group in one answer (the second answer here)."""
    quiet = {"nack_probability": 0, "reject_probability": 0, "cancel_probability": 0, "touch_probability": 0}
    config = WorkloadConfig(("q",), 0, 0, groups_probability=1.0, **quiet)  # the grouped queue's two only
    answers = (((1000, "g0"), (1001, "g1")), ((1002, "g0"), (1003, "g0")))
    ops, sent = await _consume_against(tmp_path, config, answers=answers)
    assert sorted(id_ for body in sent["ack"] for id_ in body["ids"]) == [1000, 1001, 1002, 1003]
    held = {op.value: op.facts for op in ops if op.f == "dequeue" and op.type == "invoke"}
    assert [held[v]["group"] for v in (1000, 1001, 1002, 1003)] == ["g0", "g1", "g0", "g0"]
    assert held[1000]["batch"] == held[1001]["batch"] != held[1002]["batch"] == held[1003]["batch"]
    assert {op.process for op in ops if op.f == "dequeue"} <= {"con0", "con1"}
    assert check_total_queue(ops).group_overlap == {1003: 1002}
