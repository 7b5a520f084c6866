"""What a node's HTTP port answers while the node is stopped after a failed write, until its disk has
room again (`cli.node_lifecycle`): every request 503 `resource_alarm`, naming the node and its disk, with
`Retry-After`, so that clients go to another node or come back later instead of meeting a closed
port."""

from __future__ import annotations

from aiohttp import web

from api.app_keys import CONFIG
from api.browser_guard import secure_headers
from api.error_answers import passed_on_answer
from api.errors import error_json
from cluster.config import NodeConfig
from cluster.errors import ResourceAlarmed
from cluster.resource_alarms import DISK
from cluster.security.tls import http_server_context


def create_paused_app(config: NodeConfig, failure: str) -> web.Application:
    """An app answering every request for the paused node of `config`, whose write failed with `failure`."""
    node = config.node
    alarmed = ResourceAlarmed(node, DISK)

    body = error_json(
        alarmed.code,
        f"{alarmed}; a write failed ({failure}) and the node restarts once its disk has room",
        node=node,
        resource=DISK,
        paused=True,
    )

    async def paused(request: web.Request) -> web.StreamResponse:
        return passed_on_answer(503, body)

    app = web.Application()
    app[CONFIG] = config
    app.on_response_prepare.append(secure_headers)
    app.router.add_route("*", "/{path:.*}", paused)
    return app


async def serve_paused(config: NodeConfig, failure: str) -> web.AppRunner:
    """Serve `create_paused_app` on the node's HTTP address; returns the runner (call `cleanup()`)."""
    runner = web.AppRunner(create_paused_app(config, failure))
    await runner.setup()
    site = web.TCPSite(
        runner,
        config.http.host,
        config.http.port,
        reuse_address=True,
        ssl_context=http_server_context(config),
    )
    await site.start()
    return runner
