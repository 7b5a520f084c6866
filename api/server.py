"""The HTTP application factory and the runner that serves it beside a node."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

from api import cluster_handlers, consumer_handlers, durable_handlers, queue_handlers
from api.app_keys import FORWARD_SESSION, LOGIN_THROTTLE, METRICS, NODE, REPLAY_GUARD
from api.auth import auth_middleware, bootstrap_users
from api.errors import error_middleware
from api.forwarding import FORWARD_TIMEOUT_S
from api.limits import limits_middleware
from api.login_throttle import LoginThrottle
from api.membership_handlers import add_routes as add_membership_routes
from api.metrics import Metrics
from api.openapi import serve_spec
from api.user_handlers import add_routes as add_user_routes
from cluster.node import Node
from cluster.replay_guard import ReplayGuard
from cluster.steady_clock import steady_wall_ms
from cluster.tls import http_client_context, http_server_context

QUEUE = "/api/queues/{q}"
CONSUMER = QUEUE + "/consumers/{tag}"


def create_app(node: Node) -> web.Application:
    """An aiohttp application serving the API contract for `node` (tests start it in-process)."""
    app = web.Application(
        middlewares=[error_middleware, auth_middleware, limits_middleware],
        client_max_size=node.config.max_request_bytes,
    )
    app[NODE] = node
    app[METRICS] = Metrics(node)
    app[REPLAY_GUARD] = ReplayGuard(since_ms=steady_wall_ms())
    app[LOGIN_THROTTLE] = LoginThrottle()
    app.cleanup_ctx.append(_forward_session)
    app.cleanup_ctx.append(bootstrap_users)
    app.router.add_get("/api/queues", queue_handlers.list_queues)
    app.router.add_put(QUEUE, queue_handlers.declare_queue)
    app.router.add_get(QUEUE, queue_handlers.get_queue)
    app.router.add_patch(QUEUE, queue_handlers.update_queue)
    app.router.add_delete(QUEUE, queue_handlers.delete_queue)
    app.router.add_delete(QUEUE + "/contents", queue_handlers.purge_queue)
    app.router.add_post(QUEUE + "/messages", queue_handlers.publish)
    app.router.add_get(QUEUE + "/messages", queue_handlers.browse)
    app.router.add_post(QUEUE + "/get", queue_handlers.basic_get)
    app.router.add_post(QUEUE + "/ack", queue_handlers.settle_got)
    app.router.add_post(QUEUE + "/nack", queue_handlers.settle_got)
    app.router.add_post(QUEUE + "/consumers", consumer_handlers.register_consumer)
    app.router.add_get(CONSUMER + "/deliveries", consumer_handlers.deliveries)
    app.router.add_post(CONSUMER + "/ack", consumer_handlers.settle_consumer)
    app.router.add_post(CONSUMER + "/nack", consumer_handlers.settle_consumer)
    app.router.add_delete(CONSUMER, consumer_handlers.cancel_consumer)
    app.router.add_post(CONSUMER + "/checkout", durable_handlers.checkout)
    app.router.add_post(CONSUMER + "/settle", durable_handlers.settle_below)
    app.router.add_get(CONSUMER + "/log", durable_handlers.read_log)
    app.router.add_get("/api/nodes", cluster_handlers.list_nodes)
    app.router.add_get("/api/health", cluster_handlers.health)
    app.router.add_get("/metrics", cluster_handlers.metrics)
    add_membership_routes(app.router)
    add_user_routes(app.router)
    app.router.add_get("/api/openapi.json", serve_spec)
    return app


async def _forward_session(app: web.Application) -> AsyncIterator[None]:
    timeout = aiohttp.ClientTimeout(total=FORWARD_TIMEOUT_S, connect=2.0)
    config = app[NODE].config
    app[FORWARD_SESSION] = aiohttp.ClientSession(
        timeout=timeout,
        connector=aiohttp.TCPConnector(ssl=http_client_context(config) or True),
    )
    yield
    await app[FORWARD_SESSION].close()


async def serve(node: Node) -> web.AppRunner:
    """Start the node and its HTTP API; returns the runner (call `cleanup()` then `node.stop()`)."""
    await node.start()
    config = node.config
    keepalive_s = config.keepalive_timeout_ms / 1000
    runner = web.AppRunner(create_app(node), access_log=None, keepalive_timeout=keepalive_s)
    await runner.setup()
    tls = http_server_context(config)
    site = web.TCPSite(runner, config.http.host, config.http.port, reuse_address=True, ssl_context=tls)
    await site.start()
    return runner
