"""An in-memory fake quorumq node, served from a background thread so the CLI can run in the foreground."""

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any

import msgpack
from aiohttp import web


@dataclass
class FakeQueue:
    arguments: dict[str, Any]
    ready: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    unacked: dict[int, dict[str, Any]] = field(default_factory=dict)
    consumers: int = 0


class FakeNode:
    """Just enough of the HTTP API for the CLI: queues, publish, consumers, get, nodes, health."""

    def __init__(self) -> None:
        self.queues: dict[str, FakeQueue] = {}
        self.next_id = 1
        self.next_consumer = 1
        self.publish_waits: list[int] = []  # each publish's `wait` (0 when it gives none)

    def app(self) -> web.Application:
        app = web.Application()
        router = app.router
        router.add_put("/api/queues/{q}", self.declare)
        router.add_get("/api/queues", self.list_queues)
        router.add_get("/api/queues/{q}", self.stats)
        router.add_delete("/api/queues/{q}", self.delete)
        router.add_delete("/api/queues/{q}/contents", self.purge)
        router.add_post("/api/queues/{q}/messages", self.publish)
        router.add_post("/api/queues/{q}/consumers", self.consume)
        router.add_post("/api/queues/{q}/consumers/{tag}/deliveries", self.deliveries)
        router.add_post("/api/queues/{q}/consumers/{tag}/ack", self.ack)
        router.add_post("/api/queues/{q}/consumers/{tag}/nack", self.nack)
        router.add_delete("/api/queues/{q}/consumers/{tag}", self.cancel)
        router.add_post("/api/queues/{q}/get", self.get)
        router.add_get("/api/queues/{q}/messages/peek", self.peek)
        router.add_get("/api/nodes", self.nodes)
        router.add_get("/api/health", self.health)
        return app

    def queue(self, request: web.Request) -> FakeQueue:
        name = request.match_info["q"]
        if name not in self.queues:
            raise web.HTTPNotFound(
                text=f'{{"error": "not_found", "reason": "no queue \'{name}\'"}}',
                content_type="application/json",
            )
        return self.queues[name]

    async def declare(self, request: web.Request) -> web.Response:
        name, arguments = request.match_info["q"], (await request.json())["arguments"]
        unknown = [key for key in arguments if not key.startswith("x-")]
        if unknown:
            return error(400, "bad_argument", f"unknown queue argument {unknown[0]!r}")
        if name in self.queues:
            if self.queues[name].arguments != arguments:
                return error(409, "precondition_failed", f"queue '{name}' exists with other arguments")
            return web.Response(status=204)
        self.queues[name] = FakeQueue(arguments)
        return web.json_response({"queue": name}, status=201)

    async def list_queues(self, request: web.Request) -> web.Response:
        return web.json_response([self.describe(name, queue) for name, queue in self.queues.items()])

    async def stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.describe(request.match_info["q"], self.queue(request)))

    @staticmethod
    def describe(name: str, queue: FakeQueue) -> dict[str, Any]:
        return {
            "vhost": "/",
            "name": name,
            "messages": len(queue.ready) + len(queue.unacked),
            "messages_ready": len(queue.ready),
            "messages_unacknowledged": len(queue.unacked),
            "consumers": queue.consumers,
            "leader": "n1",
            "members": ["n1", "n2", "n3"],
            "arguments": queue.arguments,
        }

    async def delete(self, request: web.Request) -> web.Response:
        self.queue(request)
        del self.queues[request.match_info["q"]]
        return web.Response(status=204)

    async def purge(self, request: web.Request) -> web.Response:
        queue = self.queue(request)
        purged, queue.ready = len(queue.ready), []
        return web.json_response({"purged": purged})

    async def publish(self, request: web.Request) -> web.Response:
        queue = self.queue(request)
        if request.content_type == "application/msgpack":  # the client's default: bodies as they are
            body = msgpack.unpackb(await request.read())
        else:
            body = await request.json()
        self.publish_waits.append(body.get("wait", 0))
        ids = []
        for message in body["messages"]:
            queue.ready.append((self.next_id, message))
            ids.append(self.next_id)
            self.next_id += 1
        return web.json_response({"ids": ids}, status=201)

    async def consume(self, request: web.Request) -> web.Response:
        self.queue(request).consumers += 1
        tag = f"c{self.next_consumer}"
        self.next_consumer += 1
        return web.json_response({"consumer": tag}, status=201)

    def checkout(self, queue: FakeQueue, count: int) -> list[dict[str, Any]]:
        taken, queue.ready = queue.ready[:count], queue.ready[count:]
        out = []
        for message_id, message in taken:
            queue.unacked[message_id] = message
            out.append({"id": message_id, "delivery_count": 0, "redelivered": False, **message})
        return out

    async def deliveries(self, request: web.Request) -> web.Response:
        queue = self.queue(request)
        if not queue.ready:
            await asyncio.sleep(float(request.query["wait"]))  # the long poll finds nothing new
        return deliveries(request, self.checkout(queue, int(request.query["max"])))

    async def get(self, request: web.Request) -> web.Response:
        body = await request.json()
        queue = self.queue(request)
        taken = self.checkout(queue, body["count"])
        if body["ack"] == "auto":
            for delivery in taken:
                del queue.unacked[delivery["id"]]
        return deliveries(request, taken)

    async def peek(self, request: web.Request) -> web.Response:
        queue, position = self.queue(request), int(request.query["position"])
        if position > len(queue.ready):
            return error(404, "no_message", f"fewer than {position} ready messages")
        message_id, message = queue.ready[position - 1]
        row = {"id": message_id, "delivery_count": 0, "redelivered": False, **message}
        return deliveries(request, row)

    async def ack(self, request: web.Request) -> web.Response:
        queue = self.queue(request)
        for message_id in (await request.json())["ids"]:
            del queue.unacked[message_id]
        return web.Response(status=204)

    async def nack(self, request: web.Request) -> web.Response:
        queue = self.queue(request)
        for message_id in (await request.json())["ids"]:
            queue.ready.append((message_id, queue.unacked.pop(message_id)))
        return web.Response(status=204)

    async def cancel(self, request: web.Request) -> web.Response:
        queue = self.queue(request)
        queue.consumers -= 1
        queue.ready[:0] = sorted(queue.unacked.items())
        queue.unacked.clear()
        return web.Response(status=204)

    async def nodes(self, request: web.Request) -> web.Response:
        return web.json_response(
            [
                {
                    "name": "n1",
                    "http": "127.0.0.1:8080",
                    "raft": "127.0.0.1:8180",
                    "status": "up",
                    "running": True,
                },
                {
                    "name": "n2",
                    "http": "127.0.0.1:8081",
                    "raft": "127.0.0.1:8181",
                    "status": "up",
                    "running": True,
                    "disk_free_alarm": True,
                    "mem_alarm": False,
                },
                {
                    "name": "n3",
                    "http": "127.0.0.1:8082",
                    "raft": "127.0.0.1:8182",
                    "status": "down",
                    "running": False,
                },
            ]
        )

    async def health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "leader_of": 1})


def deliveries(request: web.Request, rows: list[dict[str, Any]] | dict[str, Any]) -> web.Response:
    """Deliveries (or one) in msgpack when the client asks for it (bodies as published), else JSON."""
    if "application/msgpack" in request.headers.get("Accept", ""):
        return web.Response(body=msgpack.packb(rows), content_type="application/msgpack")
    return web.json_response(rows)


def error(status: int, code: str, reason: str) -> web.Response:
    return web.json_response({"error": code, "reason": reason}, status=status)


class ThreadedServer:
    """Serves an aiohttp app on 127.0.0.1 (free port) from its own event loop in a daemon thread."""

    def __init__(self, app: web.Application) -> None:
        self._app = app
        self._loop = asyncio.new_event_loop()
        self._runner = web.AppRunner(app)
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.address = ""

    def __enter__(self) -> str:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        return self.address

    async def _start(self) -> None:
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.address = f"{host}:{port}"

    def __exit__(self, *exc_info: object) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
