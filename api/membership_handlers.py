"""Handlers for replica sets and cluster membership: members, leader transfer, join and forget."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import aiohttp
from aiohttp import web

from api.app_keys import FORWARD_SESSION, MEMBERSHIP, STATUS
from api.auth import vouch
from api.forwarding import forward, on_meta_leader, on_queue_leader
from api.validation import bad, field_str, json_object, queue_name
from cluster.errors import NodeNotFound
from cluster.queues.queue_door import QueueDoor

QUEUE = "/api/queues/{q}"
MEMBER_STATUS_TIMEOUT_S = 2.0


def add_routes(router: web.UrlDispatcher) -> None:
    """Register the membership endpoints."""
    router.add_get(QUEUE + "/members", list_members)
    router.add_post(QUEUE + "/members", add_member)
    router.add_get(QUEUE + "/members/{node}", member_status)
    router.add_delete(QUEUE + "/members/{node}", delete_member)
    router.add_post(QUEUE + "/members/{node}/checkpoint", checkpoint_member)
    router.add_post(QUEUE + "/leader", transfer_leader)
    router.add_post("/api/nodes", join_node)
    router.add_delete("/api/nodes/{node}", forget_node)


async def _node_field(request: web.Request) -> str:
    body = await json_object(request)
    node = field_str(body, "node")
    if not node:
        raise bad("node is required")
    return node


@on_queue_leader
async def list_members(request: web.Request, door: QueueDoor) -> web.StreamResponse:
    """GET /api/queues/{q}/members: every member as the leader sees it, with each member's own status."""
    rows = request.app[MEMBERSHIP].queues.leader_view(door.name)
    statuses = await asyncio.gather(*(_member_status(request, door.name, row["node"]) for row in rows))
    for row, status in zip(rows, statuses, strict=True):
        row.update(status)
    return web.json_response({"queue": door.name, "leader": request.app[STATUS].name, "members": rows})


async def _member_status(request: web.Request, queue: str, member: str) -> dict[str, Any]:
    status = request.app[STATUS]
    if member == status.name:
        return request.app[MEMBERSHIP].queues.local_status(queue)
    url = status.node_http(member)
    if url is None:
        return {"raft_state": "unknown"}
    session: aiohttp.ClientSession = request.app[FORWARD_SESSION]
    try:
        timeout = aiohttp.ClientTimeout(total=MEMBER_STATUS_TIMEOUT_S)
        status_url = f"{url}/api/queues/{queue}/members/{member}"
        headers = await vouch(request, "GET", status_url)
        async with session.get(status_url, headers=headers, timeout=timeout) as answer:
            if answer.status == 200:
                return await answer.json()
            return {"raft_state": "no_replica" if answer.status == 404 else "unknown"}
    except (aiohttp.ClientError, TimeoutError):
        return {"raft_state": "unreachable"}


async def member_status(request: web.Request) -> web.StreamResponse:
    """GET /api/queues/{q}/members/{node}: that node's replica as its own Raft group sees it."""
    return await _on_member(request, request.app[MEMBERSHIP].queues.local_status)


async def checkpoint_member(request: web.Request) -> web.StreamResponse:
    """POST /api/queues/{q}/members/{node}/checkpoint: that node's replica takes a snapshot now (RabbitMQ's
    force_checkpoint); its status after."""
    return await _on_member(request, request.app[MEMBERSHIP].queues.checkpoint)


async def _on_member(request: web.Request, answer: Callable[[str], dict[str, Any]]) -> web.StreamResponse:
    """`answer(queue)` on the member node the path names: here, or forwarded there."""
    status = request.app[STATUS]
    queue, member = queue_name(request), request.match_info["node"]
    if member != status.name:
        if status.node_http(member) is None:
            raise NodeNotFound(f"node '{member}' is not a member of the cluster")
        return await forward(request, member)
    return web.json_response(answer(queue))


@on_queue_leader
async def add_member(request: web.Request, door: QueueDoor) -> web.StreamResponse:
    """POST /api/queues/{q}/members {"node"}: add a replica (learner first, voter once caught up)."""
    member = await _node_field(request)
    members = await request.app[MEMBERSHIP].queues.add(door.name, member)
    return web.json_response({"queue": door.name, "members": members}, status=201)


@on_queue_leader
async def delete_member(request: web.Request, door: QueueDoor) -> web.StreamResponse:
    """DELETE /api/queues/{q}/members/{node}: remove a replica (never the last, never the quorum)."""
    members = await request.app[MEMBERSHIP].queues.delete(door.name, request.match_info["node"])
    return web.json_response({"queue": door.name, "members": members})


@on_queue_leader
async def transfer_leader(request: web.Request, door: QueueDoor) -> web.StreamResponse:
    """POST /api/queues/{q}/leader {"node"}: hand the queue's leadership to that voting member."""
    to = await _node_field(request)
    await request.app[MEMBERSHIP].queues.transfer_leader(door.name, to)
    return web.json_response({"queue": door.name, "leader": to})


@on_meta_leader
async def join_node(request: web.Request) -> web.StreamResponse:
    """POST /api/nodes {"name", "http", "raft"}: a new node joins (as a learner of the metadata group)."""
    body = await json_object(request)
    name, http, raft = (field_str(body, key) for key in ("name", "http", "raft"))
    if not name or not http or not raft:
        raise bad("name, http and raft are required")
    nodes = await request.app[MEMBERSHIP].cluster.join(name, http, raft)
    listed = [{"name": n.name, "http": n.http, "raft": n.raft} for n in nodes]
    return web.json_response({"nodes": listed}, status=201)


@on_meta_leader
async def forget_node(request: web.Request) -> web.StreamResponse:
    """DELETE /api/nodes/{node}: forget a permanently lost node."""
    await request.app[MEMBERSHIP].cluster.forget(request.match_info["node"])
    return web.Response(status=204)
