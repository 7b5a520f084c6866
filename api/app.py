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
    binding_handlers,
    cluster_handlers,
    consumer_handlers,
    durable_handlers,
    exchange_handlers,
    management_handlers,
    membership_handlers,
    openapi,
    policy_handlers,
    queue_handlers,
    redrive_handlers,
    stream_handler,
    token_revocation,
    ui_handlers,
    user_handlers,
    vhost_handlers,
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
    OPENAPI,
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
from api.endpoints import declared, in_vhost
from api.error_answers import error_middleware
from api.forwarding import FORWARD_TIMEOUT_S
from api.limits import limits_middleware
from api.login_throttle import LoginThrottle
from api.message_rates import keep_sampling
from api.metrics import Metrics
from api.publishing import peer_server
from api.remote_publisher import PeerRemotePublisher
from api.request_ids import request_id_middleware
from api.tokens import RevokedTokens
from cluster.node import Node
from cluster.security.replay_guard import ReplayGuard
from cluster.security.tls import http_client_context, http_server_context
from cluster.steady_clock import steady_wall_ms

ACCESS_LOGGER = "quorumq.access"
ACCESS_LOG_FORMAT = '%a "%r" %s %b %Tf "%{User-Agent}i"'
"""Each request answered, at info: peer, request line, status, body bytes, seconds, user agent (the
request id and queue come with the record, `cluster.node_logging`)."""
SHUTDOWN_TIMEOUT_S = 10.0  # a stopping node waits this long for requests in flight (long-polls, forwards)
ENDPOINTS = declared(
    # queue_handlers first: the dispatcher tries the routes under /api/queues in the order they are added
    # (their paths never overlap), and the one served most, publish, is the first it declares
    queue_handlers,
    consumer_handlers,
    durable_handlers,
    redrive_handlers,
    membership_handlers,
    stream_handler,
    management_handlers,
    cluster_handlers,
    user_handlers,
    token_revocation,
    policy_handlers,
    exchange_handlers,
    binding_handlers,
    vhost_handlers,
    openapi,
    ui_handlers,
)
"""Every endpoint of the API contract, as its handler declares it (`api.endpoints.route`)."""


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
    app[OPENAPI] = openapi.spec(ENDPOINTS)
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
    """Register every endpoint (`ENDPOINTS`), in its order, then each queue endpoint's path for a queue
    of a named vhost (`in_vhost`); a GET answers HEAD too."""
    paths = [(e, e.path) for e in ENDPOINTS]
    paths += [(e, aliased) for e in ENDPOINTS if (aliased := in_vhost(e.path)) is not None]
    for endpoint, path in paths:
        if endpoint.method == "GET":
            router.add_get(path, endpoint.handler)
        else:
            router.add_route(endpoint.method, path, endpoint.handler)


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
        shutdown_timeout=SHUTDOWN_TIMEOUT_S,
    )
    await runner.setup()
    tls = http_server_context(config)
    site = web.TCPSite(runner, config.http.host, config.http.port, reuse_address=True, ssl_context=tls)
    await site.start()
    node.check_store()
    return runner
