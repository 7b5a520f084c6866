"""What an AMQP connection asks of the node, for the user it authenticated.

Queue, exchange and binding operations go through the node's own HTTP API, asserted for that user with a
node assertion as a forwarded request is (`NodeCaller.headers`): the request then takes the path any
HTTP request takes, to whichever node serves it, with every check it gets there (permissions,
arguments, alarms, formats). So the listener holds no rule of its own about queues or exchanges.
Publishes take the publish path the streaming connection takes: `publish_on_route` to a queue's leader
here or over the peer transport, answered once a majority committed them, and `publish_to_exchange`
through an exchange, routed here. A consumer's polls and settles of a queue this node leads are served at
the queue's door, as the streaming connection's are, with the handlers' checks (`_at_door`).

The connection reads its own routing changes: it keeps the highest routing revision their answers named
(`routing_revision`) and routes a publish through an exchange, or answers a passive declare, only once
this node applied it.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import aiohttp
import msgpack
from aiohttp import web

from api.access import Access, Principal
from api.amqp.reply_codes import for_answer
from api.app_keys import CALLER, CONFIG, FORWARD_SESSION, METADATA, METRICS, QUEUES, STATUS, WALL_MS
from api.auth import require, vouched_principal
from api.consumer_options import MAX_PREFETCH
from api.consumer_owners import own_consumer
from api.deliveries import DEFAULT_MAX_BYTES
from api.error_answers import error_answer
from api.exchange_publishing import (
    publish_to_exchange,
    publishes_through,
    unknown_exchange,
)
from api.forwarding import queue_route
from api.publish_job import PublishJob, publish_of
from api.publishing import publish_on_route
from api.request_bodies import body_as
from api.routing_names import DEFAULT_EXCHANGE_PATH_NAME
from api.routing_revision import CATCH_UP_S, ROUTING_REVISION_HEADER, caught_up
from api.settle_options import SETTLES, settle_options
from api.validation import MSGPACK, QUEUE_NAME
from cluster.errors import NotLeader, QueueNotFound
from cluster.queues.queue_door import QueueDoor
from cluster.queues.queue_results import MessageRow
from metadata_state.records import QUEUE_DESTINATION, BindingRecord
from metadata_state.vhost_names import DEFAULT_VHOST, qualified

POLL_WAIT_S = 5  # how long a consumer's poll waits on its queue before it asks again
POLL_MAX = 1000  # the most deliveries one poll asks for (the consumer's prefetch bounds it too)
LOCAL_POLL_WAIT_S = 1.0  # how long a poll of a queue led here waits before leadership is looked at again
RETRY_S = 30.0  # how long a call is made again while its queue has no leader to answer it
RETRY_PAUSE_S = 0.2
_NOTHING_DONE = ("no_leader",)  # a 503 that says nothing was done
_RETRIED = ("no_leader", "outcome_unknown")
T = TypeVar("T")


async def again_while(
    attempt: Callable[[], Awaitable[tuple[int, Any]]],
    retry: Callable[[int, Any], bool],
    seconds: float,
    stop: Callable[[], bool] = lambda: False,
) -> tuple[int, Any]:
    """The status and answer of `attempt()`, made again every RETRY_PAUSE_S while `retry(status, answer)`
    says so, for up to `seconds` or until `stop()`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        status, answer = await attempt()
        if not retry(status, answer) or loop.time() >= deadline or stop():
            return status, answer
        await asyncio.sleep(RETRY_PAUSE_S)


class NodeCalls:
    """The node's operations for `user`, as an AMQP connection calls them. Each raises the AmqpError
    quorumq's refusal translates into (`reply_codes.for_answer`)."""

    def __init__(self, app: web.Application, user: str, vhost: str = DEFAULT_VHOST) -> None:
        self._app = app
        self.user = user
        self.vhost = vhost
        self.routing_revision = 0  # the highest the connection's routing changes were answered with

    # -- queues --------------------------------------------------------------------------------------

    async def declare(self, queue: str, arguments: dict[str, Any]) -> None:
        """Declare `queue` (durable, a quorum queue) with `arguments`; an existing queue with the same
        arguments is fine."""
        await self._call("PUT", self._queue_path(queue), {"arguments": arguments})

    async def counts(self, queue: str) -> tuple[int, int]:
        """The queue's ready messages and consumers, as its leader counts them (NOT_FOUND when it is
        not declared)."""
        stats = await self._call("GET", self._queue_path(queue))
        if not isinstance(stats, dict):  # `/api/queues/{x}` lists vhost x: no queue is named so
            raise for_answer(404, {"error": "not_found", "reason": f"no queue '{queue}'"})
        return int(stats.get("messages_ready", 0)), int(stats.get("consumers", 0))

    async def delete(self, queue: str, if_unused: bool, if_empty: bool) -> None:
        """Delete `queue`, with RabbitMQ's guards."""
        query = {k: "true" for k, on in (("if_unused", if_unused), ("if_empty", if_empty)) if on}
        path = self._queue_path(queue) + ("?" + urllib.parse.urlencode(query) if query else "")
        await self._call("DELETE", path)

    async def purge(self, queue: str) -> int:
        """Remove the queue's ready messages; how many there were."""
        return int((await self._call("DELETE", self._queue_path(queue) + "/contents")).get("purged", 0))

    # -- exchanges and bindings ----------------------------------------------------------------------

    async def declare_exchange(
        self,
        name: str,
        kind: str,
        durable: bool,
        auto_delete: bool,
        internal: bool,
        arguments: dict[str, Any],
    ) -> None:
        """Declare exchange `name`; an existing one with the same definition is fine."""
        definition = {
            "type": kind,
            "durable": durable,
            "auto_delete": auto_delete,
            "internal": internal,
            "arguments": arguments,
        }
        await self._call("PUT", self._exchange_path(name), definition)

    async def check_exchange(self, name: str) -> None:
        """NOT_FOUND unless exchange `name` exists, as this node knows once it applied the connection's own
        routing changes (or after CATCH_UP_S, as it knows then)."""
        await caught_up(self._app[METADATA], self.routing_revision, CATCH_UP_S)
        await self._call("GET", self._exchange_path(name))

    async def delete_exchange(self, name: str, if_unused: bool) -> None:
        """Delete exchange `name` with every binding from or to it (`if_unused`: only while it is the
        source of none)."""
        await self._call("DELETE", self._exchange_path(name) + ("?if-unused=true" if if_unused else ""))

    async def bind(self, binding: BindingRecord) -> None:
        """Add `binding`; the same binding again is fine."""
        body = {"routing_key": binding.routing_key, "arguments": binding.arguments}
        await self._call("POST", self._binding_path(binding), body)

    async def unbind(self, binding: BindingRecord) -> None:
        """Remove `binding` (NOT_FOUND when there is none)."""
        name = urllib.parse.quote(binding.properties_key, safe="")
        await self._call("DELETE", f"{self._binding_path(binding)}/{name}")

    # -- reading ---------------------------------------------------------------------------------------

    async def get(self, queue: str, auto_ack: bool) -> MessageRow | None:
        """One message of `queue` (settled at once with `auto_ack`, else held for a settle), if one is
        ready."""
        body = {"count": 1, "ack": "auto" if auto_ack else "manual"}
        rows = await self._call("POST", self._queue_path(queue) + "/get", body, repeatable=not auto_ack)
        return answered_row(rows[0]) if rows else None

    async def register(self, queue: str, prefetch: int, priority: int, auto_ack: bool) -> str:
        """A new consumer of `queue`: its tag. A prefetch of 0 (AMQP's "no limit") is the most a
        consumer may hold."""
        body = {"prefetch": prefetch or MAX_PREFETCH, "priority": priority, "auto_ack": auto_ack}
        answer = await self._call("POST", self._queue_path(queue) + "/consumers", body, repeatable=False)
        return str(answer["consumer"])

    async def poll(self, queue: str, consumer: str, most: int, auto_ack: bool) -> list[MessageRow]:
        """Up to `most` deliveries for `consumer`, waiting for the first: from the queue's door when this
        node leads it (up to LOCAL_POLL_WAIT_S, so a leadership lost meanwhile is seen soon), else
        through the HTTP API, forwarded to its leader, up to POLL_WAIT_S (an auto-ack consumer's poll is
        not made again after an unknown outcome: it may have taken messages)."""
        most = min(most, POLL_MAX)

        async def at_door(door: QueueDoor, caller: Principal) -> list[MessageRow]:
            owned = own_consumer(door, caller, consumer)
            rows = await door.poll(owned, most, LOCAL_POLL_WAIT_S, DEFAULT_MAX_BYTES)
            self._app[METRICS].count_delivered(door.name, rows)
            return rows

        retried = _NOTHING_DONE if auto_ack else _RETRIED
        here = await self._at_door(queue, at_door, "an AMQP consumer's poll", retried)
        if here is not None:
            return here
        query = urllib.parse.urlencode({"max": most, "wait": POLL_WAIT_S})
        path = f"{self._consumer_path(queue, consumer)}/deliveries?{query}"
        return [answered_row(item) for item in await self._call("GET", path, repeatable=not auto_ack)]

    async def settle(
        self, queue: str, consumer: str | None, ids: Sequence[int], ack: bool, requeue: bool = True
    ) -> None:
        """Ack `ids` (`ack`), or return them (`requeue`) or discard them (dead-lettered when the queue
        says so); of `consumer`, or of gets when None: at the queue's door when this node leads it, else
        through the HTTP API."""
        kind = "ack" if ack else "nack"
        body: dict[str, Any] = {"ids": list(ids)}
        if not ack:
            body["requeue"] = requeue

        async def at_door(door: QueueDoor, caller: Principal) -> bool:
            options = settle_options(body_as(body, SETTLES[kind]))
            holder = None if consumer is None else own_consumer(door, caller, consumer)
            await door.settle(
                options.ids, holder, options.outcome, options.failed, options.reason, options.delay_ms
            )
            self._app[METRICS].count_settled(door.name, kind, len(options.ids))
            return True

        if await self._at_door(queue, at_door, "an AMQP settle", _RETRIED) is None:
            base = self._queue_path(queue) if consumer is None else self._consumer_path(queue, consumer)
            await self._call("POST", f"{base}/{kind}", body)

    async def _at_door(
        self,
        queue: str,
        action: Callable[[QueueDoor, Principal], Awaitable[T]],
        what: str,
        retried: Sequence[str],
    ) -> T | None:
        """`action` as the queue's handler runs it on the leader, without the HTTP round trip, when this
        node leads the queue: for the user (`vouched_principal`) with read permission on it, its errors
        answered as the API answers them. None when this node does not lead the queue, or the action
        failed as a call through the HTTP API would be made again for (`retried`): the caller goes
        through the API then."""
        app = self._app
        name = qualified(self.vhost, queue)
        try:
            door = app[QUEUES].leading_door(name)
        except (NotLeader, QueueNotFound):
            return None
        try:
            caller = vouched_principal(app[CONFIG], app[METADATA], self.user)
            require(caller, Access.READ, name)
            return await action(door, caller)
        except Exception as exc:
            status, answer = error_answer(app, exc, what)
            if status == 503 and answer.get("error") in retried:
                return None
            raise for_answer(status, answer) from None

    async def cancel(self, queue: str, consumer: str) -> None:
        """End `consumer`: what it holds returns to the queue."""
        await self._call("DELETE", self._consumer_path(queue, consumer))

    # -- publishing -----------------------------------------------------------------------------------

    async def publish(
        self, queue: str, messages: list[dict[str, Any]], publisher: str, seq: int
    ) -> tuple[int, dict[str, Any]]:
        """Publish `messages` (publish-body message maps) to `queue`, deduplicated by `publisher` and
        `seq`: the status and body quorumq answers (201 once a majority committed them; 404 only when
        a metadata leader knows no such queue, a 503 `no_leader` while there is none)."""
        app = self._app
        try:
            if not QUEUE_NAME.fullmatch(queue):  # a key naming no queue of this vhost: unroutable
                raise QueueNotFound(f"no queue '{queue}' in vhost '{self.vhost}'")
            queue = qualified(self.vhost, queue)
            require(vouched_principal(app[CONFIG], app[METADATA], self.user), Access.WRITE, queue)
            job = self._job(messages, publisher, seq)
            try:
                route = await queue_route(app[QUEUES], app[STATUS], queue)
            except QueueNotFound:
                if app[STATUS].meta_leader() is None:  # not known here, and no metadata leader to ask
                    raise NotLeader(
                        f"no metadata leader to tell whether queue '{queue}' exists", None
                    ) from None
                raise
            return await publish_on_route(app, queue, job, self.user, 0, route)
        except Exception as exc:
            return error_answer(app, exc, "an AMQP publish")

    async def publish_to_exchange(
        self,
        exchange: str,
        routing_key: str,
        messages: list[dict[str, Any]],
        publisher: str,
        seq: int,
        mandatory: bool,
    ) -> tuple[int, dict[str, Any]]:
        """Publish `messages` through `exchange` by `routing_key` (and their headers), routed here once this
        node applied the connection's own routing changes: the status and body `publish_to_exchange`
        answers (201 once every queue reached committed its copy; 200 with `mandatory` when some reached
        none, listed in `unroutable`; 404 for no such exchange, 403 for an internal one; a 503
        `metadata_behind` after CATCH_UP_S without that revision)."""
        app = self._app
        try:
            metadata = app[METADATA]
            caller = vouched_principal(app[CONFIG], metadata, self.user)
            if not await publishes_through(
                metadata, caller, self.vhost, exchange, routing_key, self.routing_revision
            ):
                raise unknown_exchange(self.vhost, exchange)
            job = self._job(messages, publisher, seq)
            return await publish_to_exchange(app, self.vhost, exchange, routing_key, job, mandatory)
        except Exception as exc:
            return error_answer(app, exc, "an AMQP publish through an exchange")

    def _job(self, messages: list[dict[str, Any]], publisher: str, seq: int) -> PublishJob:
        body = {"messages": messages, "publisher": publisher, "seq": seq}
        return publish_of(body, self._app[CONFIG], self._app[WALL_MS]())

    # -- the HTTP API --------------------------------------------------------------------------------

    async def _call(self, method: str, path: str, payload: object = None, *, repeatable: bool = True) -> Any:
        """What this node's HTTP API answers `method path` with `payload` (JSON) for the user (deliveries
        in msgpack, so bodies stay bytes); its refusal as an AmqpError. While the answer is a 503 for
        want of a leader (an election, a leader change), the call is made again for up to RETRY_S; one
        whose outcome is unknown only when it is `repeatable` (not an auto-ack get, which may have
        taken a message, nor a consumer's registration). A routing revision an answer names raises
        `routing_revision` to it."""
        retried = _RETRIED if repeatable else _NOTHING_DONE
        status, decoded = await again_while(
            lambda: self._call_once(method, path, payload),
            lambda status, answer: status == 503 and answer.get("error") in retried,
            RETRY_S,
        )
        if status < 300:
            return decoded
        raise for_answer(status, decoded)

    async def _call_once(self, method: str, path: str, payload: object) -> tuple[int, Any]:
        config = self._app[CONFIG]
        url = config.http_url.rstrip("/") + path
        body = b"" if payload is None else json.dumps(payload).encode()
        headers = await self._app[CALLER].headers(method, url, body, user=self.user, to=config.node)
        headers["Accept"] = MSGPACK
        if payload is not None:
            headers["Content-Type"] = "application/json"
        session: aiohttp.ClientSession = self._app[FORWARD_SESSION]
        async with session.request(method, url, data=body or None, headers=headers) as answer:
            data = await answer.read()
            status = answer.status
            revision = answer.headers.get(ROUTING_REVISION_HEADER, "")
            if revision.isdigit():
                self.routing_revision = max(self.routing_revision, int(revision))
            decoded = msgpack.unpackb(data) if data and answer.content_type == MSGPACK else _json(data)
        if status >= 300:
            return status, decoded if isinstance(decoded, dict) else {}
        return status, decoded if decoded is not None else {}

    # -- paths in the connection's vhost --------------------------------------------------------------

    def _queue_path(self, queue: str) -> str:
        if self.vhost == DEFAULT_VHOST:
            return "/api/queues/" + urllib.parse.quote(queue, safe="")
        return "/api/queues/" + "/".join(urllib.parse.quote(part, safe="") for part in (self.vhost, queue))

    def _exchange_path(self, exchange: str) -> str:
        return f"/api/exchanges/{self._vhost_segment}/{_exchange_segment(exchange)}"

    def _binding_path(self, binding: BindingRecord) -> str:
        """The path of the bindings between `binding`'s source and destination."""
        if binding.destination_type == QUEUE_DESTINATION:
            destination = "q/" + urllib.parse.quote(binding.destination, safe="")
        else:
            destination = "e/" + _exchange_segment(binding.destination)
        return f"/api/bindings/{self._vhost_segment}/e/{_exchange_segment(binding.source)}/{destination}"

    def _consumer_path(self, queue: str, consumer: str) -> str:
        return f"{self._queue_path(queue)}/consumers/{urllib.parse.quote(consumer, safe='')}"

    @property
    def _vhost_segment(self) -> str:
        return urllib.parse.quote(self.vhost, safe="")


def _json(data: bytes) -> Any:
    return json.loads(data) if data else None


def _exchange_segment(exchange: str) -> str:
    """An exchange's name in a path (the default exchange's as `amq.default`)."""
    return urllib.parse.quote(exchange or DEFAULT_EXCHANGE_PATH_NAME, safe="")


def answered_row(item: dict[str, Any]) -> MessageRow:
    """A delivery as the API answers it in msgpack, as a row."""
    return MessageRow(
        int(item["id"]),
        bytes(item["body"]),
        str(item.get("encoding", "base64")),
        dict(item.get("headers") or {}),
        int(item.get("delivery_count", 0)),
        bool(item.get("redelivered", False)),
        int(item.get("published_at", 0)),
        acquired_count=int(item.get("acquired_count", 0)),
        priority=int(item.get("priority", 0)),
    )
