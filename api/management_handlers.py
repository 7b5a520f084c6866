"""The read side of RabbitMQ's management API that monitoring tools use (Telegraf's and Datadog's RabbitMQ
inputs, `rabbitmqadmin list|show`): `/api/overview`, `/api/nodes` and `/api/nodes/{node}` with RabbitMQ's
field names beside ours. The queues' side is `queue_handlers.list_queues` (and a vhost's, at
`/api/queues/{vhost}`); the vhosts' is `vhost_handlers`."""

from __future__ import annotations

import asyncio
import time
from importlib.metadata import version
from typing import Any

from aiohttp import web

from api import process_usage
from api.access import Access
from api.app_keys import ALARMS, METADATA, STARTED, STATUS, STREAMS
from api.endpoints import route
from api.errors import ApiError
from api.forwarding import get_from_node
from api.message_rates import summed_stats
from api.paging import PAGING_QUERY, listed
from api.queue_handlers import visible_queues

QUEUE_TOTALS = ("messages", "messages_ready", "messages_unacknowledged")
VERSION = version("quorumq")


@route(
    "GET",
    "/api/overview",
    access=Access.AUTHENTICATED,
    summary="RabbitMQ's overview: message counts and rates (publish, deliver_get, ack, redeliver), queue and"
    " object totals, listeners",
    responses={"200": "overview"},
    about=(
        "RabbitMQ's management API as monitoring tools read it: message counts and rates "
        "(`message_stats`: `publish`, `deliver_get`, `ack`, `redeliver`, each with "
        "`*_details.rate`), queue and object totals, RabbitMQ's queue fields and page objects "
        "(docs/use/management-api.md); `?local=true` lists this "
        "node's own replicas' view"
    ),
)
async def overview(request: web.Request) -> web.StreamResponse:
    """GET /api/overview: the cluster's message counts and rates (summed over its queues, each as its
    leader counts it), queue totals, object totals and this node's listener."""
    queues, nodes = await asyncio.gather(visible_queues(request), _node_reports(request))
    status = request.app[STATUS]
    body = {
        "management_version": VERSION,
        "rabbitmq_version": f"quorumq {VERSION}",
        "product_name": "quorumq",
        "product_version": VERSION,
        "cluster_name": "quorumq",
        "node": status.name,
        "message_stats": summed_stats([q.get("message_stats", {}) for q in queues]),
        "queue_totals": {field: sum(int(q.get(field, 0)) for q in queues) for field in QUEUE_TOTALS},
        "object_totals": {
            "queues": len(queues),
            "consumers": sum(int(q.get("consumers", 0)) for q in queues),
            "connections": sum(int(n.get("connections", 0)) for n in nodes),
            "channels": 0,
            "exchanges": 0,
        },
        "listeners": [
            {"node": n["name"], "protocol": "http", "ip_address": _host(n), "port": _port(n)} for n in nodes
        ],
        "statistics_db_node": status.name,
    }
    return web.json_response(body)


@route(
    "GET",
    "/api/nodes",
    access=Access.AUTHENTICATED,
    summary="cluster members, with RabbitMQ's fields as each reports them (running, uptime, mem_used,"
    " mem_limit, mem_alarm, disk_free, disk_free_limit, disk_free_alarm, fd_used, proc_used,"
    " partitions)",
    responses={"200": "nodes"},
    query=PAGING_QUERY,
    about=(
        "cluster membership; each member with RabbitMQ's fields as it reports them "
        "(`running`, `uptime`, `mem_used`, `mem_limit`, `mem_alarm`, `disk_free`, "
        "`disk_free_limit`, `disk_free_alarm`, `fd_used`, `proc_used`, `partitions`)"
    ),
)
async def list_nodes(request: web.Request) -> web.StreamResponse:
    """GET /api/nodes: every member with its addresses, its incarnation, whether this node reaches it
    (`status`), and RabbitMQ's fields as the node itself reports them (`running` false when it did not
    answer)."""
    return web.json_response(listed(request, await _node_reports(request)))


@route(
    "GET",
    "/api/nodes/{node}",
    access=Access.AUTHENTICATED,
    summary="one member, as GET /api/nodes lists it",
    responses={"200": "node"},
)
async def node_details(request: web.Request) -> web.StreamResponse:
    """GET /api/nodes/{node}: one member, as `list_nodes` lists it (404 for no member of that name)."""
    name = request.match_info["node"]
    if name not in request.app[METADATA].nodes:
        raise ApiError(404, "not_found", f"no node '{name}' in the cluster")
    if name == request.app[STATUS].name:
        return web.json_response(_own_report(request))
    return web.json_response(await _report_of(request, name))


async def _node_reports(request: web.Request) -> list[dict[str, Any]]:
    """Every member, by name: this node's own report, the others' asked of them."""
    names = sorted(request.app[METADATA].nodes)
    own = request.app[STATUS].name
    others = await asyncio.gather(*(_report_of(request, name) for name in names if name != own))
    reports = {report["name"]: report for report in others}
    if own in names:
        reports[own] = _own_report(request)
    return [reports[name] for name in names]


def _listed_fields(request: web.Request, name: str) -> dict[str, Any]:
    """What the metadata and this node's view say of member `name`."""
    info = request.app[METADATA].nodes[name]
    return {
        "name": info.name,
        "http": info.http,
        "raft": info.raft,
        "incarnation": info.incarnation,
        "status": "up" if request.app[STATUS].is_up(name) else "down",
        "type": "disc",
        "running": False,
    }


def _own_report(request: web.Request) -> dict[str, Any]:
    """This node as RabbitMQ's `/api/nodes` reports one (`partitions`: the members it cannot reach)."""
    status = request.app[STATUS]
    groups = status.groups()
    members = request.app[METADATA].nodes
    return {
        **_listed_fields(request, status.name),
        "running": True,
        "uptime": int((time.monotonic() - request.app[STARTED]) * 1000),
        **request.app[ALARMS].report(),
        "fd_used": process_usage.file_descriptors_used(),
        "fd_total": process_usage.file_descriptors_total(),
        "proc_used": process_usage.tasks_running(),
        "connections": len(request.app[STREAMS]),
        "partitions": sorted(name for name in members if not status.is_up(name)),
        "raft_groups": groups.hosted,
        "raft_groups_led": groups.led,
        "raft_groups_quiet": groups.quiet,
        "queues_led": groups.led - int(status.meta_leader() == status.name),
    }


async def _report_of(request: web.Request, name: str) -> dict[str, Any]:
    """Member `name` as it reports itself, or what is known of it here when it does not answer."""
    url = request.app[STATUS].node_http(name)
    if url is not None and request.app[STATUS].is_up(name):
        report = await get_from_node(request, f"{url}/api/nodes/{name}")
        if isinstance(report, dict):
            return {**report, "status": "up"}
    return _listed_fields(request, name)


def _host(node: dict[str, Any]) -> str:
    return str(node.get("http", "")).rsplit("//", 1)[-1].rsplit(":", 1)[0]


def _port(node: dict[str, Any]) -> int:
    port = str(node.get("http", "")).rsplit(":", 1)[-1].rstrip("/")
    return int(port) if port.isdigit() else 0
