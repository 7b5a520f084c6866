"""A publish passed to the queue's leader over the peer transport (`cluster.replication.peer_requests`)
instead of a second HTTP request.

The node the client called authenticates the caller, reads and checks the body (`read_publish`) and
sends the leader `["publish", queue, user, hops, publisher, seq, [[body, headers, encoding,
expiration], ...]]` (and, when a message has a delay, the delays as an eighth element: only once every
node reads queue operations version 5; when a message has a priority, the priorities as a ninth, the
eighth then None without delays: version 6), vouching for `user` as a node assertion does: the peer link is
authenticated by the cluster secret. The leader grants it by the publish route's own access rule
(`ROUTE_ACCESS`, `require`), runs it through the same door as a publish made to it (`PublishJob.run`) and
replies `[status, body]`, the HTTP answer it would have given. A node that no longer leads the queue
passes the publish on while it has hops left (`next_hop`), over the peer transport only, else answers
503 with the leader hint.

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

from api.app_keys import CONFIG, FORMATS, METADATA, METRICS, PEER_REQUESTS, QUEUES, STATUS
from api.auth import ROUTE_ACCESS, require, vouched_principal
from api.error_answers import error_answer
from api.forwarding import Route, await_leader, next_hop, queue_route
from api.publish_job import PublishJob
from api.validation import ENCODINGS, bad
from cluster.queues.queue_limits import INT64_MAX, MESSAGE_PRIORITY_MAX
from cluster.replication.entry_codec import DELAY_OP_VERSION, PRIORITY_OP_VERSION
from cluster.replication.peer_requests import Server
from cluster.replication.stored_message import StoredMessage

PUBLISH = "publish"
PUBLISH_ACCESS = ROUTE_ACCESS[("POST", "/api/queues/{q}/messages")]
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
    """Publish `job` to queue `name` for `user`: here when this node leads the queue, else forwarded over
    the peer transport with one more hop. The HTTP status and body of the answer."""
    route = await queue_route(app[QUEUES], app[STATUS], name)
    if route is None:
        return 201, await job.run(app, app[QUEUES].leading_door(name))
    if job.delays is not None:  # what its leader reads, too
        app[FORMATS].require_queue_ops(DELAY_OP_VERSION, "no delays")
    if job.priorities is not None:
        app[FORMATS].require_queue_ops(PRIORITY_OP_VERSION, "no priorities")
    target = next_hop(hops, route.target)
    messages = [[m.body, m.headers, m.encoding, expiration] for m, expiration in job.messages]
    request = [PUBLISH, name, user, hops + 1, job.publisher, job.seq, messages]
    if job.delays is not None or job.priorities is not None:  # only to a leader that reads them
        request.append(None if job.delays is None else list(job.delays))
    if job.priorities is not None:
        request.append(list(job.priorities))
    reply = app[PEER_REQUESTS].call(target, request)
    app[METRICS].forwarded.labels("peer").inc()
    status, body = await await_leader(target, route.leader_now, reply)
    return status, body


def peer_server(app: web.Application) -> Server:
    """What serves the publishes peers forward to this node."""
    return functools.partial(_serve, app)


async def _serve(app: web.Application, peer: str, request: Any) -> list[Any]:
    try:
        name, user, hops, job = _decoded(request)
        require(vouched_principal(app[CONFIG], app[METADATA], user), PUBLISH_ACCESS, name)
        status, body = await publish_routed(app, name, job, user, hops)
    except Exception as exc:
        return list(error_answer(app, exc, f"a publish forwarded by {peer}"))
    return [status, body]


def _decoded(request: Any) -> tuple[str, str, int, PublishJob]:
    """The queue, user, hops and publish of a forwarded publish; 400 when it is not one."""
    try:
        tag, name, user, hops, publisher, seq, messages, *more = request
        delays = more[0] if more else None
        priorities = more[1] if len(more) > 1 else None
        stored = [
            (StoredMessage(body, headers, encoding), expires) for body, headers, encoding, expires in messages
        ]
    except (TypeError, ValueError) as exc:
        raise bad(f"malformed forwarded publish: {exc}") from exc
    well_formed = (
        tag == PUBLISH
        and isinstance(name, str)
        and isinstance(user, str)
        and type(hops) is int
        and (publisher is None) == (seq is None)
        and (publisher is None or isinstance(publisher, str))
        and (seq is None or _is_int64(seq))
        and all(_well_formed(message, expires) for message, expires in stored)
        and len(more) <= 2
        and (delays is None or _well_formed_delays(delays, len(stored)))
        and (priorities is None or _well_formed_priorities(priorities, len(stored)))
    )
    if not well_formed:
        raise bad("malformed forwarded publish")
    return name, user, hops, PublishJob(stored, publisher, seq, delays, priorities)


def _well_formed_delays(delays: Any, count: int) -> bool:
    return (
        isinstance(delays, list)
        and len(delays) == count
        and all(d is None or (_is_int64(d) and d > 0) for d in delays)
    )


def _well_formed_priorities(priorities: Any, count: int) -> bool:
    return (
        isinstance(priorities, list)
        and len(priorities) == count
        and all(type(p) is int and 0 <= p <= MESSAGE_PRIORITY_MAX for p in priorities)
    )


def _well_formed(message: StoredMessage, expires: Any) -> bool:
    """Whether a forwarded message has the types `read_publish` gives (what the log stores)."""
    return (
        isinstance(message.body, bytes)
        and isinstance(message.headers, dict)
        and all(isinstance(key, str) for key in message.headers)
        and message.encoding in ENCODINGS
        and (expires is None or _is_int64(expires))
    )


def _is_int64(value: Any) -> bool:
    return type(value) is int and 0 <= value <= INT64_MAX
