"""A publish, here or passed on: run on this node's door when it leads the queue (`PublishJob.run`), else
sent to the queue's leader over the peer transport (`cluster.replication.peer_requests`) as one frame
(`api.forwarded_publish`) instead of a second HTTP request.

The node the client called authenticates the caller, reads and checks the body (`read_publish`) and
sends the leader the frame, vouching for the user as a node assertion does: the peer link is
authenticated by the cluster secret. The leader grants it by the publish route's own access rule
(`PUBLISH_ACCESS`, `require`), runs it through the same door as a publish made to it and replies `[status,
body]`, the HTTP answer it would have given. A node that no longer leads the queue passes the publish on
while it has hops left (`next_hop`), over the peer transport only, else answers 503 with the leader hint.

The forwarding node gives up as an HTTP forward does (`await_leader`): 503 `outcome_unknown` once it no
longer believes the target leads, or a connection with it closes after the frame was sent
(`PeerRequests`); a plain `no_leader` when nothing could be sent.

A publish is forwarded over HTTP instead (`api.forwarding.forward`) when the leader does not serve peer
requests (a node of an earlier version; docs/decisions/0014), a connection with it is down, or the body
is larger than MAX_PEER_FORWARD_BYTES (or of unknown length): one large frame would hold up the Raft
messages behind it on the link.
"""

from __future__ import annotations

import functools
from typing import Any

from aiohttp import web

from api.access import Access
from api.app_keys import CONFIG, FORMATS, METADATA, METRICS, PEER_REQUESTS, QUEUES, STATUS
from api.auth import require, vouched_principal
from api.error_answers import error_answer
from api.forwarded_publish import decode_frame, publish_frame
from api.forwarding import Route, await_leader, next_hop, queue_route
from api.publish_job import PublishJob
from cluster.replication.peer_requests import Server

PUBLISH_ACCESS = Access.WRITE  # the publish route declares it as its access rule (`api.queue_handlers`)
MAX_PEER_FORWARD_BYTES = 1 << 20

Answer = tuple[int, dict[str, Any]]


def forwards_over_peers(request: web.Request, route: Route) -> bool:
    """Whether this publish goes to its leader over the peer transport (else over HTTP). A queue this node
    does not know goes over HTTP to the metadata leader, which answers 404 before reading the body (as
    it answers any request on an unknown queue)."""
    size = request.content_length
    return (
        route.queue_known
        and size is not None
        and size <= MAX_PEER_FORWARD_BYTES
        and route.target is not None
        and request.app[PEER_REQUESTS].can_call(route.target)
    )


async def publish_routed(app: web.Application, name: str, job: PublishJob, user: str, hops: int) -> Answer:
    """Publish `job` to queue `name` for `user` where `queue_route` says it is served (`publish_on_route`)."""
    route = await queue_route(app[QUEUES], app[STATUS], name)
    return await publish_on_route(app, name, job, user, hops, route)


async def publish_on_route(
    app: web.Application, name: str, job: PublishJob, user: str, hops: int, route: Route | None
) -> Answer:
    """Publish `job` to queue `name` for `user`: here when `route` is None (this node leads the queue),
    else forwarded to its target over the peer transport with one more hop. The HTTP status and body of
    the answer."""
    if route is None:
        return 201, await job.run(app, app[QUEUES].leading_door(name))
    app[FORMATS].require_publish(job.delays is not None, job.priorities is not None)  # as its leader will
    target = next_hop(hops, route.target)
    reply = app[PEER_REQUESTS].call(target, publish_frame(name, user, hops + 1, job))
    app[METRICS].forwarded.labels("peer").inc()
    status, body = await await_leader(target, route.leader_now, reply)
    return status, body


def peer_server(app: web.Application) -> Server:
    """What serves the publishes peers forward to this node."""
    return functools.partial(_serve, app)


async def _serve(app: web.Application, peer: str, request: Any) -> list[Any]:
    try:
        name, user, hops, job = decode_frame(request)
        require(vouched_principal(app[CONFIG], app[METADATA], user), PUBLISH_ACCESS, name)
        status, body = await publish_routed(app, name, job, user, hops)
    except Exception as exc:
        return list(error_answer(app, exc, f"a publish forwarded by {peer}"))
    return [status, body]
