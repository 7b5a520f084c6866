"""What the workload records for answers a real cluster rarely gives, against a tiny in-test node."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from aiohttp import web
from aiohttp.test_utils import TestServer

from jepsen_tests.checker import check_total_queue
from jepsen_tests.history import HistoryWriter, read_history
from jepsen_tests.workload import Workload, WorkloadConfig


async def test_a_confirm_with_fewer_ids_than_messages_is_recorded_as_a_protocol_error(tmp_path: Path) -> None:
    answered = asyncio.Event()

    async def short(request: web.Request) -> web.Response:
        answered.set()
        return web.json_response({"ids": []}, status=201)

    app = web.Application()
    app.router.add_post("/api/queues/{q}/messages", short)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    history = HistoryWriter(tmp_path / "history.jsonl")
    workload = Workload(
        [str(server.make_url("")).rstrip("/")], history, WorkloadConfig(("q",), 1, 0), random.Random(1)
    )
    stop = asyncio.Event()
    running = asyncio.create_task(workload.run(stop))
    try:
        await asyncio.wait_for(answered.wait(), 10)
    finally:
        stop.set()
        await running
        await server.close()
        history.close()
    ops = read_history(history.path)
    confirms = [(op.type, op.error) for op in ops if op.f == "enqueue" and op.type != "invoke"]
    assert confirms and set(confirms) == {("ok", "short_ids")}
    verdict = check_total_queue(ops)
    assert verdict.protocol_errors == sorted(op.value for op in ops if op.type == "ok")
    assert not verdict.valid
