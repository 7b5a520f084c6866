"""Any node accepts any request and passes it to the node that can serve it.

A request is served where the queue's (or the metadata's) leader is. Another node proxies it there,
adding a hop count; a node that still cannot serve a request that used up its hops answers 503 with a
leader hint, so requests never loop. Two hops cover a node whose metadata is a moment behind: it
passes the request to the metadata leader, which knows every committed queue. A node that knows a
queue but no leader for it yet (right after the declare, during an election) holds the request up to
NO_LEADER_WAIT_S for one before answering 503.

A forward to a leader is given up, with a 503 naming the leader known now (if any), as soon as this
node no longer believes the target leads: a leader that stopped answering (frozen, or cut off) is
replaced by an election, and the client should go to the new one rather than wait for the old one
(docs/decisions/0012). Whether the old leader acted on the request is then unknown, as after any lost
answer: that 503 says so with the error code `outcome_unknown` (OutcomeUnknown), and clients resend only
requests safe to repeat (reads; publishes, deduplicated by publisher and seq). A leader that refused the
connection got nothing: that 503 is a plain `no_leader`.

Requests are proxied as HTTP requests vouched for by a node assertion (`api.auth.vouch`), except
publishes to a leader that serves peer requests: those travel over the peer transport
(`api.forwarded_publish`), under the same rules (`next_hop`, `await_leader`).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp
from aiohttp import web

from api.app_keys import FORWARD_SESSION, METRICS, QUEUES, STATUS
from api.auth import UnknownDestination, vouch
from api.routing_revision import ROUTING_REVISION_HEADER
from api.validation import bad, queue_name
from cluster.errors import NotLeader, OutcomeUnknown, QueueNotFound
from cluster.node_status import NodeStatus
from cluster.queues.queue_directory import QueueDirectory
from cluster.queues.queue_door import QueueDoor
from cluster.security.peer_auth import NODE_AUTH_HEADER, PlainHttpRefused

HOPS_HEADER = "X-Quorumq-Hops"
CLIENT_NODE_HEADER = "X-Quorumq-Client-Node"
MAX_HOPS = 2
_HOP_COUNTS = {str(hops): hops for hops in range(MAX_HOPS + 1)}  # what a node may say in HOPS_HEADER
FORWARD_TIMEOUT_S = 90.0
LEADER_RECHECK_S = 0.1  # how often a pending forward compares its target with the leader known now
NO_LEADER_WAIT_S = 2.0  # how long a request on a queue whose leader this node does not know waits for one
PASSED_BACK = ("Retry-After", "Location", ROUTING_REVISION_HEADER)
"""The headers of a forwarded request's answer the client hears: when to retry, what was created, and
the routing revision a change was applied at."""

T = TypeVar("T")
QueueHandler = Callable[[web.Request, QueueDoor], Awaitable[web.StreamResponse]]


def client_node(request: web.Request) -> str:
    """The node the client first talked to (for client-local leader placement)."""
    return request.headers.get(CLIENT_NODE_HEADER) or request.app[STATUS].name


def hops_of(request: web.Request) -> int:
    """How many nodes passed the request on before this one. Only a node says so (its assertion came with
    the request, and the auth middleware checked it): a client's header is ignored (0), and a node's that
    is not a count from 0 to MAX_HOPS is 400."""
    if NODE_AUTH_HEADER not in request.headers:
        return 0
    hops = _HOP_COUNTS.get(request.headers.get(HOPS_HEADER, "0"))
    if hops is None:
        raise bad(f"{HOPS_HEADER} must be a count of hops from 0 to {MAX_HOPS}")
    return hops


def next_hop(hops: int, target: str | None) -> str:
    """The target of a request that came through `hops` nodes, or NotLeader (503 with `target` as the
    leader hint) when it has none or used up its hops."""
    if target is None or hops >= MAX_HOPS:
        raise NotLeader("no reachable leader for this request yet", target)
    return target


async def await_leader(target: str, leader_now: Callable[[], str | None] | None, answer: Awaitable[T]) -> T:
    """`answer` from `target`, given up (cancelled) with OutcomeUnknown once `leader_now()` names another
    leader or none, or after FORWARD_TIMEOUT_S."""
    sent = asyncio.ensure_future(answer)
    deadline = asyncio.get_running_loop().time() + FORWARD_TIMEOUT_S
    try:
        while True:
            done, _ = await asyncio.wait(
                {sent}, timeout=LEADER_RECHECK_S if leader_now else FORWARD_TIMEOUT_S
            )
            if done:
                return sent.result()
            now = leader_now() if leader_now is not None else target
            if now != target:  # a new leader, or none that this node can see
                raise OutcomeUnknown(f"leader {target} stopped leading while the request waited on it", now)
            if asyncio.get_running_loop().time() >= deadline:
                raise OutcomeUnknown(f"leader {target} gave no answer in {FORWARD_TIMEOUT_S:.0f} s", target)
    finally:
        sent.cancel()


async def forward(
    request: web.Request, target: str | None, leader_now: Callable[[], str | None] | None = None
) -> web.StreamResponse:
    """Proxy the request to `target` over HTTP, or answer 503 when that is impossible. With `leader_now`
    (the leader this node knows now), the forward is abandoned with a 503 once that is no longer `target`."""
    hops = hops_of(request)
    url = request.app[STATUS].node_http(target)
    target = next_hop(hops, target)
    if url is None:
        raise NotLeader("no reachable leader for this request yet", target)
    headers = {
        HOPS_HEADER: str(hops + 1),
        CLIENT_NODE_HEADER: client_node(request),
        "Content-Type": request.headers.get("Content-Type", "application/json"),
        "Accept": request.headers.get("Accept", "application/json"),
    }
    if ROUTING_REVISION_HEADER in request.headers:  # what the caller read, for the node it goes to
        headers[ROUTING_REVISION_HEADER] = request.headers[ROUTING_REVISION_HEADER]
    session: aiohttp.ClientSession = request.app[FORWARD_SESSION]
    body, url = await request.read(), url + request.path_qs
    request.app[METRICS].forwarded.labels("http").inc()
    try:
        return await await_leader(target, leader_now, _proxy(request, session, url, body, headers))
    except (aiohttp.ClientConnectorError, PlainHttpRefused, UnknownDestination) as exc:  # nothing was sent
        raise NotLeader(f"leader {target} unreachable: {exc}", target) from exc
    except (aiohttp.ClientError, TimeoutError) as exc:  # sent, but no answer came back
        raise OutcomeUnknown(f"leader {target} gave no answer: {exc}", target) from exc


async def _proxy(
    request: web.Request, session: aiohttp.ClientSession, url: str, data: bytes, headers: dict[str, str]
) -> web.Response:
    """Send the request on, vouching for its caller. A vouch refused (a plain-HTTP URL from a node with
    TLS: `PlainHttpRefused`; a target forgotten meanwhile: `UnknownDestination`) sends nothing, so the
    target counts as unreachable."""
    headers = {**headers, **await vouch(request, request.method, url, data)}
    async with session.request(request.method, url, data=data, headers=headers) as answer:
        body = await answer.read()
        response = web.Response(status=answer.status, body=body, content_type=answer.content_type)
        for name in PASSED_BACK:
            if name in answer.headers:
                response.headers[name] = answer.headers[name]
        return response


def _queue_leader_now(queues: QueueDirectory, name: str) -> str | None:
    try:
        return queues.leader_of(name)
    except QueueNotFound:
        return None


@dataclass(frozen=True)
class Route:
    """Where a request on a queue led elsewhere goes: to `target`, while `leader_now()` names it;
    `queue_known` is False when it goes to the metadata leader because this node does not know the queue."""

    target: str | None
    leader_now: Callable[[], str | None]
    queue_known: bool = True


async def queue_route(queues: QueueDirectory, status: NodeStatus, name: str) -> Route | None:
    """Where requests on queue `name` are served: None here (this node leads it), else the route to its
    leader (waited for up to NO_LEADER_WAIT_S while this node knows none), or to the metadata leader
    when this node does not know the queue (QueueNotFound when this node is the metadata leader, or
    there is none)."""
    try:
        leader = queues.leader_of(name)
        if leader is None:
            leader = await queues.leader_within(name, NO_LEADER_WAIT_S)
    except QueueNotFound:
        if status.meta_leader() in (None, status.name):
            raise
        return Route(status.meta_leader(), status.meta_leader, queue_known=False)
    if leader == status.name:
        return None
    return Route(leader, functools.partial(_queue_leader_now, queues, name))


async def get_from_node(request: web.Request, url: str) -> Any:
    """The JSON another node answers a GET of `url` with, vouched for the caller as its own request would
    be, or None when it cannot be asked or does not answer 200."""
    session: aiohttp.ClientSession = request.app[FORWARD_SESSION]
    try:
        async with session.get(url, headers=await vouch(request, "GET", url)) as answer:
            return await answer.json() if answer.status == 200 else None
    except (aiohttp.ClientError, TimeoutError):
        return None


def on_queue_leader(handler: QueueHandler) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """Run `handler` on the queue's leader, forwarding the request there when it is elsewhere."""

    @functools.wraps(handler)
    async def serve(request: web.Request) -> web.StreamResponse:
        queues, name = request.app[QUEUES], queue_name(request)
        route = await queue_route(queues, request.app[STATUS], name)
        if route is not None:
            return await forward(request, route.target, route.leader_now)
        return await handler(request, queues.leading_door(name))

    return serve


def on_meta_leader(
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """Run `handler` on the metadata leader, forwarding the request there when it is elsewhere."""

    @functools.wraps(handler)
    async def serve(request: web.Request) -> web.StreamResponse:
        status = request.app[STATUS]
        leader = status.meta_leader()
        if leader != status.name:
            return await forward(request, leader, status.meta_leader)
        return await handler(request)

    return serve
