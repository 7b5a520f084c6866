"""Handlers for replica sets and cluster membership: members, leader transfer, join and forget."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any

import aiohttp
from aiohttp import web
from msgspec import Meta

from api.access import Access
from api.app_keys import FORWARD_SESSION, MEMBERSHIP, STATUS
from api.auth import vouch
from api.endpoints import QUEUE, route
from api.forwarding import forward, on_meta_leader, on_queue_leader
from api.request_bodies import RequestBody, read_body_as
from api.validation import queue_name
from cluster.errors import NodeNotFound
from cluster.queues.queue_door import QueueDoor

MEMBER_STATUS_TIMEOUT_S = 2.0
Name = Annotated[str, Meta(min_length=1)]


class MemberChoice(RequestBody, forbid_unknown_fields=False):
    """The node a change of a queue's replica set names (other fields are ignored)."""

    node: Name


class Joining(RequestBody, forbid_unknown_fields=False):
    """A node asking to join: its name and its HTTP and Raft addresses (other fields are ignored)."""

    name: Name
    http: Name
    raft: Name


@route(
    "GET",
    QUEUE + "/members",
    access=Access.ANY_QUEUE_PERMISSION,
    summary="the queue's replica set",
    responses={"200": "members"},
    about="replica set changes and leadership transfer",
)
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


@route(
    "GET",
    QUEUE + "/members/{node}",
    access=Access.ANY_QUEUE_PERMISSION,
    summary="one member's status",
    responses={"200": "status"},
)
async def member_status(request: web.Request) -> web.StreamResponse:
    """GET /api/queues/{q}/members/{node}: that node's replica as its own Raft group sees it."""
    return await _on_member(request, request.app[MEMBERSHIP].queues.local_status)


@route(
    "POST",
    QUEUE + "/members/{node}/checkpoint",
    access=Access.CONFIGURE_ADMIN,
    summary="that node's replica takes a snapshot now (force_checkpoint): its status after",
    responses={"200": "status"},
)
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


@route(
    "POST",
    QUEUE + "/members",
    access=Access.CONFIGURE_ADMIN,
    summary="add a member",
    responses={"201": "added", "409": "refused"},
    body=MemberChoice,
)
@on_queue_leader
async def add_member(request: web.Request, door: QueueDoor) -> web.StreamResponse:
    """POST /api/queues/{q}/members {"node"}: add a replica (learner first, voter once caught up)."""
    member = (await read_body_as(request, MemberChoice)).node
    members = await request.app[MEMBERSHIP].queues.add(door.name, member)
    return web.json_response({"queue": door.name, "members": members}, status=201)


@route(
    "DELETE",
    QUEUE + "/members/{node}",
    access=Access.CONFIGURE_ADMIN,
    summary="remove a member",
    responses={"200": "removed", "409": "refused"},
)
@on_queue_leader
async def delete_member(request: web.Request, door: QueueDoor) -> web.StreamResponse:
    """DELETE /api/queues/{q}/members/{node}: remove a replica (never the last, never the quorum)."""
    members = await request.app[MEMBERSHIP].queues.delete(door.name, request.match_info["node"])
    return web.json_response({"queue": door.name, "members": members})


@route(
    "POST",
    QUEUE + "/leader",
    access=Access.CONFIGURE_ADMIN,
    summary="transfer leadership",
    responses={"200": "transferred", "409": "refused"},
    body=MemberChoice,
)
@on_queue_leader
async def transfer_leader(request: web.Request, door: QueueDoor) -> web.StreamResponse:
    """POST /api/queues/{q}/leader {"node"}: hand the queue's leadership to that voting member."""
    to = (await read_body_as(request, MemberChoice)).node
    await request.app[MEMBERSHIP].queues.transfer_leader(door.name, to)
    return web.json_response({"queue": door.name, "leader": to})


@route(
    "POST",
    "/api/nodes",
    access=Access.NODE,  # the joining node asks (docs/decisions/0019)
    summary="join a node",
    responses={"200": "joined", "201": "joined", "409": "refused"},
    body=Joining,
)
@on_meta_leader
async def join_node(request: web.Request) -> web.StreamResponse:
    """POST /api/nodes {"name", "http", "raft"}: a new node joins (as a learner of the metadata group)."""
    joining = await read_body_as(request, Joining)
    nodes = await request.app[MEMBERSHIP].cluster.join(joining.name, joining.http, joining.raft)
    listed = [{"name": n.name, "http": n.http, "raft": n.raft} for n in nodes]
    return web.json_response({"nodes": listed}, status=201)


@route(
    "DELETE",
    "/api/nodes/{node}",
    access=Access.ADMINISTRATOR,
    summary="forget a stopped node",
    responses={"204": "forgotten", "409": "running"},
)
@on_meta_leader
async def forget_node(request: web.Request) -> web.StreamResponse:
    """DELETE /api/nodes/{node}: forget a permanently lost node."""
    await request.app[MEMBERSHIP].cluster.forget(request.match_info["node"])
    return web.Response(status=204)
