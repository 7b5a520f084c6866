"""The HTTP application factory and the runner that serves it beside a node."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

from api import (
    cluster_handlers,
    consumer_handlers,
    durable_handlers,
    management_handlers,
    queue_handlers,
    redrive_handlers,
    stream_handler,
    token_revocation,
    ui_handlers,
)
from api.app_keys import (
    ALARMS,
    CALLER,
    CONFIG,
    FORMATS,
    FORWARD_SESSION,
    LOGIN_THROTTLE,
    MEMBERSHIP,
    METADATA,
    METADATA_DOOR,
    METRICS,
    PEER_REQUESTS,
    QUEUES,
    REPLAY_GUARD,
    REVOKED_TOKENS,
    STARTED,
    STATUS,
    STREAMS,
    WALL_MS,
)
from api.auth import auth_middleware, bootstrap_users
from api.browser_guard import browser_guard, secure_headers
from api.consumer_revocation import end_revoked_consumers
from api.error_answers import error_middleware
from api.forwarding import FORWARD_TIMEOUT_S
from api.limits import limits_middleware
from api.login_throttle import LoginThrottle
from api.membership_handlers import add_routes as add_membership_routes
from api.message_rates import keep_sampling
from api.metrics import Metrics
from api.openapi import serve_spec
from api.policy_handlers import add_routes as add_policy_routes
from api.publishing import peer_server
from api.remote_publisher import PeerRemotePublisher
from api.request_ids import request_id_middleware
from api.tokens import RevokedTokens
from api.user_handlers import add_routes as add_user_routes
from cluster.node import Node
from cluster.security.replay_guard import ReplayGuard
from cluster.security.tls import http_client_context, http_server_context
from cluster.steady_clock import steady_wall_ms

ACCESS_LOGGER = "quorumq.access"
ACCESS_LOG_FORMAT = '%a "%r" %s %b %Tf "%{User-Agent}i"'
"""Each request answered, at info: peer, request line, status, body bytes, seconds, user agent (the
request id and queue come with the record, `cluster.node_logging`)."""
QUEUE = "/api/queues/{q}"
VHOST_QUEUES = "/api/queues/%2F"  # RabbitMQ's paths name the vhost; "/" is the only one
CONSUMER = QUEUE + "/consumers/{tag}"


def create_app(node: Node) -> web.Application:
    """An aiohttp application serving the API contract for a started `node` (tests start it in-process).
    Handlers see only the parts of the node handed over here."""
    app = web.Application(
        middlewares=[
            request_id_middleware,
            browser_guard(node.config),
            error_middleware,
            auth_middleware,
            limits_middleware,
        ],
        client_max_size=node.config.max_request_bytes,
    )
    app.on_response_prepare.append(secure_headers)
    app[CONFIG] = node.config
    app[WALL_MS] = node.env.wall_ms
    app[QUEUES] = node.directory
    app[METADATA] = node.metadata
    app[METADATA_DOOR] = node.metadata_door
    app[STATUS] = node.status
    app[FORMATS] = node.formats
    app[MEMBERSHIP] = node.membership
    app[CALLER] = node.caller
    app[PEER_REQUESTS] = node.peer_requests
    app[ALARMS] = node.alarms
    app[METRICS] = Metrics(node.directory, node.status, node.raft_metrics, node.alarms)
    app[REPLAY_GUARD] = ReplayGuard(since_ms=steady_wall_ms())
    app[LOGIN_THROTTLE] = LoginThrottle()
    app[REVOKED_TOKENS] = RevokedTokens()
    app[STREAMS] = set()
    app[STARTED] = time.monotonic()
    app.on_shutdown.append(stream_handler.close_streams)
    node.peer_requests.serve(peer_server(app))
    node.publish_elsewhere_with(PeerRemotePublisher(app))
    app.cleanup_ctx.append(_forward_session)
    app.cleanup_ctx.append(bootstrap_users)
    app.cleanup_ctx.append(end_revoked_consumers)
    app.cleanup_ctx.append(_sample_rates)
    add_routes(app.router)
    return app


def add_routes(router: web.UrlDispatcher) -> None:
    """Register every endpoint of the API contract. The dispatcher tries the routes under /api/queues in
    the order they are added (their paths never overlap), so the one served most, publish, comes first."""
    router.add_post(QUEUE + "/messages", queue_handlers.publish)
    router.add_get(QUEUE + "/messages", queue_handlers.browse)
    router.add_get(QUEUE + "/messages/peek", queue_handlers.peek)
    router.add_get("/api/queues", queue_handlers.list_queues)
    router.add_get(VHOST_QUEUES, queue_handlers.list_queues)  # RabbitMQ's form, before QUEUE matches it
    router.add_get(VHOST_QUEUES + "/{q}", queue_handlers.get_queue)
    router.add_put(QUEUE, queue_handlers.declare_queue)
    router.add_get(QUEUE, queue_handlers.get_queue)
    router.add_patch(QUEUE, queue_handlers.update_queue)
    router.add_delete(QUEUE, queue_handlers.delete_queue)
    router.add_delete(QUEUE + "/contents", queue_handlers.purge_queue)
    router.add_post(QUEUE + "/get", queue_handlers.basic_get)
    router.add_post(QUEUE + "/ack", queue_handlers.settle_got)
    router.add_post(QUEUE + "/nack", queue_handlers.settle_got)
    router.add_post(QUEUE + "/touch", queue_handlers.touch_got)
    router.add_post(QUEUE + "/redrive", redrive_handlers.start_redrive)
    router.add_get(QUEUE + "/redrive", redrive_handlers.list_redrives)
    router.add_delete(QUEUE + "/redrive/{task}", redrive_handlers.cancel_redrive)
    router.add_get(QUEUE + "/consumers", consumer_handlers.list_consumers)
    router.add_post(QUEUE + "/consumers", consumer_handlers.register_consumer)
    router.add_get(CONSUMER + "/deliveries", consumer_handlers.deliveries)
    router.add_post(CONSUMER + "/deliveries", consumer_handlers.deliveries)
    router.add_post(CONSUMER + "/ack", consumer_handlers.settle_consumer)
    router.add_post(CONSUMER + "/nack", consumer_handlers.settle_consumer)
    router.add_post(CONSUMER + "/touch", consumer_handlers.touch_consumer)
    router.add_delete(CONSUMER, consumer_handlers.cancel_consumer)
    router.add_post(CONSUMER + "/checkout", durable_handlers.checkout)
    router.add_post(CONSUMER + "/settle", durable_handlers.settle_below)
    router.add_get(CONSUMER + "/log", durable_handlers.read_log)
    router.add_get("/api/stream", stream_handler.stream)
    router.add_get("/api/overview", management_handlers.overview)
    router.add_get("/api/nodes", management_handlers.list_nodes)
    router.add_get("/api/nodes/{node}", management_handlers.node_details)
    router.add_get("/api/health", cluster_handlers.health)
    router.add_get("/api/health/checks/alarms", cluster_handlers.alarms_check)
    router.add_get("/metrics", cluster_handlers.metrics)
    add_membership_routes(router)
    add_user_routes(router)
    router.add_delete("/api/tokens", token_revocation.revoke_token)
    add_policy_routes(router)
    router.add_get("/api/openapi.json", serve_spec)
    router.add_get("/", ui_handlers.index)
    router.add_get("/ui/{file}", ui_handlers.asset)


async def _sample_rates(app: web.Application) -> AsyncIterator[None]:
    directory = app[QUEUES]
    sampling = asyncio.create_task(
        keep_sampling(app[METRICS].rates, lambda: {queue.name for queue in directory.leading_doors()})
    )
    yield
    sampling.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await sampling


async def _forward_session(app: web.Application) -> AsyncIterator[None]:
    timeout = aiohttp.ClientTimeout(total=FORWARD_TIMEOUT_S, connect=2.0)
    config = app[CONFIG]
    app[FORWARD_SESSION] = aiohttp.ClientSession(
        timeout=timeout,
        connector=aiohttp.TCPConnector(ssl=http_client_context(config) or True),
    )
    yield
    await app[FORWARD_SESSION].close()


async def serve(node: Node) -> web.AppRunner:
    """Start the node and its HTTP API, then the read of its whole database (`Node.check_store`); returns
    the runner (call `cleanup()` then `node.stop()`)."""
    await node.start()
    config = node.config
    keepalive_s = config.keepalive_timeout_ms / 1000
    runner = web.AppRunner(
        create_app(node),
        access_log=logging.getLogger(ACCESS_LOGGER),
        access_log_format=ACCESS_LOG_FORMAT,
        keepalive_timeout=keepalive_s,
    )
    await runner.setup()
    tls = http_server_context(config)
    site = web.TCPSite(runner, config.http.host, config.http.port, reuse_address=True, ssl_context=tls)
    await site.start()
    node.check_store()
    return runner
