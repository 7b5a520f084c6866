"""Handlers for the cluster view: health, metrics (nodes: `management_handlers`)."""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from api.access import Access
from api.app_keys import ALARMS, FORMATS, METADATA, METRICS, STATUS
from api.auth import PRINCIPAL_KEY
from api.endpoints import route
from api.metrics import queues_shown
from api.schemas import HEALTH


@route(
    "GET",
    "/api/health",
    access=Access.PUBLIC,
    summary="node health",
    responses={"200": "ready", "503": "not ready"},
    content={"200": HEALTH, "503": HEALTH},
    about=(
        "the node's health report, with `damage` when the node set a damaged database aside, and "
        "`formats`: the version of each replicated format it reads and writes"
    ),
)
async def health(request: web.Request) -> web.StreamResponse:
    """GET /api/health: 200 once `NodeStatus.readiness` is ok (leader known, registered, users known),
    else 503; `groups_halted` lists the groups whose replica here cannot read a committed entry;
    `damage` tells of a damaged database set aside (`NodeStatus.damage_status`), `store_check`
    whether the read of the whole database after start is done (`StoreCheck.report`), `formats` which
    version of each replicated format the node reads and writes (`FormatVersions.report`). A resource
    alarm holds publishers back; it does not make the node unready (`alarms_check` tells of it)."""
    status = request.app[STATUS]
    groups = status.groups()
    readiness = status.readiness()
    body = {
        "node": status.name,
        "status": readiness,
        "metadata_leader": status.meta_leader(),
        "groups_hosted": groups.hosted,
        "groups_led": groups.led,
        "groups_quiet": groups.quiet,
        "groups_without_leader": groups.without_leader,
        "groups_repairing": groups.repairing,
        "groups_halted": [
            {"group": gid, "index": halted.index, "reason": halted.reason}
            for gid, halted in groups.halted.items()
        ],
        "queues": len(request.app[METADATA].queues),
        "damage": status.damage_status(),
        "store_check": status.store_check.report(),
        "formats": request.app[FORMATS].report(),
    }
    return web.json_response(body, status=200 if readiness == "ok" else 503)


@route(
    "GET",
    "/api/health/checks/alarms",
    access=Access.METRICS,
    summary="resource alarms (RabbitMQ's health check)",
    responses={"200": "no node in alarm", "503": "a node in alarm"},
    about=(
        '200 `{"status": "ok"}` when no node this one knows of is in a disk or memory alarm, '
        'else 503 with `alarms`: `[{"node", "resource"}]`; credentials as for `/metrics` (none '
        "with `metrics_public`)"
    ),
)
async def alarms_check(request: web.Request) -> web.StreamResponse:
    """GET /api/health/checks/alarms (RabbitMQ's; for monitoring, as /metrics): 200 when no node this one
    knows of is in a resource alarm, else 503 naming each node and its alarms."""
    alarmed = request.app[ALARMS].alarmed()
    if not alarmed:
        return web.json_response({"status": "ok"})
    body = {
        "status": "failed",
        "reason": "resource alarm(s) in effect",
        "alarms": [
            {"node": node, "resource": resource} for node, alarms in alarmed.items() for resource in alarms
        ],
    }
    return web.json_response(body, status=503)


@route(
    "GET",
    "/metrics",
    access=Access.METRICS,
    summary="Prometheus metrics",
    responses={"200": "text exposition format"},
)
async def metrics(request: web.Request) -> web.StreamResponse:
    """GET /metrics: Prometheus text format, a queue's series only for callers who may see the queue."""
    shows = queues_shown(request.get(PRINCIPAL_KEY), request.app[METADATA])
    payload = await request.app[METRICS].exposition(shows)
    return web.Response(body=payload, headers={"Content-Type": CONTENT_TYPE_LATEST})
