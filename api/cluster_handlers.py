"""Handlers for the cluster view: nodes, health, metrics."""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from api.app_keys import METRICS, NODE
from cluster.node import META_GROUP, Node


def _node_status(node: Node, name: str) -> str:
    if name == node.name:
        return "up"
    return "up" if node.transport.peers().get(name) else "down"


async def list_nodes(request: web.Request) -> web.StreamResponse:
    """GET /api/nodes: every member with its addresses, its incarnation and whether this node reaches it."""
    node: Node = request.app[NODE]
    nodes = [
        {
            "name": info.name,
            "http": info.http,
            "raft": info.raft,
            "incarnation": info.incarnation,
            "status": _node_status(node, info.name),
        }
        for info in sorted(node.meta.state.nodes.values(), key=lambda i: i.name)
    ]
    return web.json_response(nodes)


async def health(request: web.Request) -> web.StreamResponse:
    """GET /api/health: 200 once `Node.readiness` is ok (leader known, registered, users known), else 503;
    `damage` tells of a damaged database set aside (`Node.damage_status`)."""
    node: Node = request.app[NODE]
    assert node.host is not None
    groups = node.host.groups
    without_quorum = sorted(gid for gid in groups if gid != META_GROUP and node.host.leader_of(gid) is None)
    repairing = sorted(gid for gid, group in groups.items() if group.raft.repair is not None)
    status = node.readiness()
    body = {
        "node": node.name,
        "status": status,
        "metadata_leader": node.meta_leader(),
        "groups_hosted": len(groups),
        "groups_led": sum(1 for g in groups.values() if g.raft.is_leader),
        "groups_without_leader": without_quorum,
        "groups_repairing": repairing,
        "queues": len(node.meta.state.queues),
        "damage": node.damage_status(),
    }
    return web.json_response(body, status=200 if status == "ok" else 503)


async def metrics(request: web.Request) -> web.StreamResponse:
    """GET /metrics: Prometheus text format."""
    payload = generate_latest(request.app[METRICS].registry)
    return web.Response(body=payload, headers={"Content-Type": CONTENT_TYPE_LATEST})
