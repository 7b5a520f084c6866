"""Handlers for the cluster view: nodes, health, metrics."""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from api.app_keys import FORMATS, METADATA, METRICS, STATUS


async def list_nodes(request: web.Request) -> web.StreamResponse:
    """GET /api/nodes: every member with its addresses, its incarnation and whether this node reaches it."""
    status = request.app[STATUS]
    nodes = [
        {
            "name": info.name,
            "http": info.http,
            "raft": info.raft,
            "incarnation": info.incarnation,
            "status": "up" if status.is_up(info.name) else "down",
        }
        for info in sorted(request.app[METADATA].nodes.values(), key=lambda i: i.name)
    ]
    return web.json_response(nodes)


async def health(request: web.Request) -> web.StreamResponse:
    """GET /api/health: 200 once `NodeStatus.readiness` is ok (leader known, registered, users known),
    else 503; `damage` tells of a damaged database set aside (`NodeStatus.damage_status`), `store_check`
    whether the read of the whole database after start is done (`StoreCheck.report`), `formats` which
    version of each replicated format the node reads and writes (`FormatVersions.report`)."""
    status = request.app[STATUS]
    groups = status.groups()
    readiness = status.readiness()
    body = {
        "node": status.name,
        "status": readiness,
        "metadata_leader": status.meta_leader(),
        "groups_hosted": groups.hosted,
        "groups_led": groups.led,
        "groups_without_leader": groups.without_leader,
        "groups_repairing": groups.repairing,
        "queues": len(request.app[METADATA].queues),
        "damage": status.damage_status(),
        "store_check": status.store_check.report(),
        "formats": request.app[FORMATS].report(),
    }
    return web.json_response(body, status=200 if readiness == "ok" else 503)


async def metrics(request: web.Request) -> web.StreamResponse:
    """GET /metrics: Prometheus text format."""
    payload = generate_latest(request.app[METRICS].registry)
    return web.Response(body=payload, headers={"Content-Type": CONTENT_TYPE_LATEST})
