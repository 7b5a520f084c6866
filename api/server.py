"""The HTTP application factory and the runner that serves it beside a node."""

from __future__ import annotations

import aiohttp
from aiohttp import web

from api import cluster_handlers, consumer_handlers, queue_handlers
from api.errors import error_middleware
from api.forwarding import FORWARD_TIMEOUT_S
from api.membership_handlers import add_routes as add_membership_routes
from api.metrics import Metrics
from cluster.node import Node

QUEUE = "/api/queues/{q}"
CONSUMER = QUEUE + "/consumers/{tag}"


def create_app(node: Node) -> web.Application:
    """An aiohttp application serving the API contract for `node` (tests start it in-process)."""
    app = web.Application(middlewares=[error_middleware], client_max_size=node.config.max_request_bytes)
    app["node"] = node
    app["metrics"] = Metrics(node)
    app.cleanup_ctx.append(_forward_session)
    app.router.add_get("/api/queues", queue_handlers.list_queues)
    app.router.add_put(QUEUE, queue_handlers.declare_queue)
    app.router.add_get(QUEUE, queue_handlers.get_queue)
    app.router.add_patch(QUEUE, queue_handlers.update_queue)
    app.router.add_delete(QUEUE, queue_handlers.delete_queue)
    app.router.add_delete(QUEUE + "/contents", queue_handlers.purge_queue)
    app.router.add_post(QUEUE + "/messages", queue_handlers.publish)
    app.router.add_post(QUEUE + "/get", queue_handlers.basic_get)
    app.router.add_post(QUEUE + "/ack", queue_handlers.settle_got)
    app.router.add_post(QUEUE + "/nack", queue_handlers.settle_got)
    app.router.add_post(QUEUE + "/consumers", consumer_handlers.register_consumer)
    app.router.add_get(CONSUMER + "/deliveries", consumer_handlers.deliveries)
    app.router.add_post(CONSUMER + "/ack", consumer_handlers.settle_consumer)
    app.router.add_post(CONSUMER + "/nack", consumer_handlers.settle_consumer)
    app.router.add_delete(CONSUMER, consumer_handlers.cancel_consumer)
    app.router.add_get("/api/nodes", cluster_handlers.list_nodes)
    app.router.add_get("/api/health", cluster_handlers.health)
    app.router.add_get("/metrics", cluster_handlers.metrics)
    add_membership_routes(app.router)
    return app


async def _forward_session(app: web.Application):  # type: ignore[no-untyped-def]
    timeout = aiohttp.ClientTimeout(total=FORWARD_TIMEOUT_S, connect=2.0)
    app["forward_session"] = aiohttp.ClientSession(timeout=timeout)
    yield
    await app["forward_session"].close()


async def serve(node: Node) -> web.AppRunner:
    """Start the node and its HTTP API; returns the runner (call `cleanup()` then `node.stop()`)."""
    await node.start()
    runner = web.AppRunner(create_app(node), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, node.config.http.host, node.config.http.port, reuse_address=True)
    await site.start()
    return runner
