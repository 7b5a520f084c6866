"""Client: the asyncio client for the quorumq HTTP API (one method per endpoint)."""

import functools
import itertools
import ssl
import uuid
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Any, Literal, NamedTuple, Self
from urllib.parse import quote

import aiohttp

from quorumq import routing_paths
from quorumq.auth import Auth, resolve_credentials
from quorumq.errors import NotFoundError, QuorumqError
from quorumq.hold_keeper import HoldKeeper
from quorumq.incoming import IncomingMessage, settled_through
from quorumq.messages import (
    Delivery,
    Publishable,
    as_message_list,
    decode_deliveries,
    decode_delivery,
    encode_message,
    nack_body,
)
from quorumq.publish_answers import RoutedPublish, confirmed_ids, routed_publish
from quorumq.publisher import Publisher
from quorumq.routing_paths import (
    Destination,
    binding_path,
    bindings_path,
    exchange_path,
    exchanges_path,
    permission_path,
    vhost_path,
)
from quorumq.stream import ConsumerSink
from quorumq.subscription import Subscription
from quorumq.transport import DEFAULT_UNRESPONSIVE_AFTER, JSON, MSGPACK, NodeTransport

DEFAULT_PREFETCH = 100
NO_MESSAGE = "no_message"
_NOT_READY = frozenset({503})
Wire = Literal["msgpack", "json"]
ExchangeType = Literal["direct", "fanout", "topic", "headers"]


class SequencePosition(NamedTuple):
    """A durable consumer's delivery sequence: settled below `settled`, handed out below `end`; after a
    checkout, `taken_bytes` is the body bytes of the messages it took."""

    settled: int
    end: int
    taken_bytes: int = 0


queue_path = functools.lru_cache(maxsize=1024)(routing_paths.queue_path)
"""`routing_paths.queue_path`, remembered: every publish and ack needs one."""


def _user_path(name: str, *parts: str) -> str:
    return "/".join(["/api/users", *(quote(segment, safe="") for segment in (name, *parts))])


def _policy_path(vhost: str, name: str, operator: bool = False) -> str:
    return vhost_path("operator-policies" if operator else "policies", vhost, name)


class Client:
    """An asyncio client for a quorumq cluster reachable through any of `nodes` (base URLs or HOST:PORT).

    Every request is bounded by `timeout` seconds in total (plus the long-poll wait for deliveries);
    connecting to one node gives up after `connect_timeout` and moves on to the next node, and so does a
    retryable request (a read, a publish) to a node that answers neither it nor a health check within
    `unresponsive_after` each (a frozen or stopped node; quorumq.transport). Publishes
    carry this client's `publisher_id` and a fresh sequence number, so retries never duplicate.
    Credentials: `auth` (HTTP Basic, a (user, password) pair) or `token` (bearer); `tls` is an SSL
    context or a bool for HTTPS verification; whatever is not given comes from
    QUORUMQ_USER/PASSWORD/TOKEN/CA_FILE (quorumq.auth).
    `wire` is how message bodies travel: "msgpack" (the default; publishes and deliveries carry raw bytes)
    or "json" (the plain JSON contract; bytes go as base64, a third larger and encoded at both ends).
    `stream`: publishes and subscriptions travel over one streaming connection per node (GET /api/stream,
    msgpack frames, pipelined; quorumq.stream) under the same retry policy, and over HTTP with a node
    that does not offer it. The default: on with the msgpack wire, off with "json".
    `vhost`: the virtual host whose queues, exchanges and bindings this client names (`/` by default).
    Use as `async with Client([...]) as client:` or call `close()`.
    """

    def __init__(
        self,
        nodes: Sequence[str],
        *,
        timeout: float = 10.0,
        connect_timeout: float = 2.0,
        unresponsive_after: float = DEFAULT_UNRESPONSIVE_AFTER,
        session: aiohttp.ClientSession | None = None,
        auth: Auth | None = None,
        token: str | None = None,
        tls: ssl.SSLContext | bool | None = None,
        wire: Wire = "msgpack",
        stream: bool | None = None,
        vhost: str = "/",
    ) -> None:
        if wire not in ("msgpack", "json"):
            raise ValueError(f"wire must be 'msgpack' or 'json', not {wire!r}")
        credentials = resolve_credentials(auth, token, tls)
        self._stream = wire == "msgpack" if stream is None else stream
        self._transport = NodeTransport(
            nodes,
            timeout=timeout,
            connect_timeout=connect_timeout,
            unresponsive_after=unresponsive_after,
            session=session,
            credentials=credentials,
            stream=self._stream,
            vhost=vhost,
        )
        self._vhost = vhost
        self.publisher_id = uuid.uuid4().hex
        self._publish_seq = itertools.count(1)
        self._packed = wire == "msgpack"
        self._message_type = MSGPACK if self._packed else JSON
        self._poll_method = "POST"  # GET once a node answers 405: one older than the POST form

    @property
    def node_urls(self) -> list[str]:
        """The node base URLs this client fails over between."""
        return list(self._transport.nodes)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Release the HTTP session (unless it was passed in)."""
        await self._transport.close()

    # Queues

    async def declare(self, queue: str, arguments: dict[str, Any] | None = None) -> bool:
        """Declare `queue`; True if it was created, False if it existed with the same arguments.

        Raises ConflictError if it exists with different arguments, BadRequestError for bad ones."""
        reply = await self._transport.request(
            "PUT", queue_path(self._vhost, queue), body={"arguments": arguments or {}}, retry_sent=True
        )
        return reply.status == 201

    async def delete_queue(self, queue: str, if_empty: bool = False, if_unused: bool = False) -> None:
        """Delete `queue` (optionally only when it is empty / has no consumers)."""
        params = {
            name: "true" for name, wanted in (("if_empty", if_empty), ("if_unused", if_unused)) if wanted
        }
        await self._transport.request("DELETE", queue_path(self._vhost, queue), params=params)

    async def purge(self, queue: str) -> int:
        """Remove every ready message of `queue`; returns how many were removed."""
        reply = await self._transport.request("DELETE", queue_path(self._vhost, queue, "contents"))
        return _count_from(reply.payload, "purged")

    async def start_redrive(
        self,
        queue: str,
        *,
        to: str | None = None,
        since: int | str | None = None,
        until: int | str | None = None,
        rate: int | None = None,
        task: str | None = None,
    ) -> dict[str, Any]:
        """Start moving dead-letter queue `queue`'s messages back: to `to`, or each to the queue its
        newest `x-death` entry names (administrators only); those enqueued from `since` to `until` (epoch
        ms or ISO-8601; by default every message there now), at most `rate` a second. Returns the task
        (`task`, `state`, `total`, `moved`, ...); `task` names it (a fresh one by default), so a retry
        finds the same task rather than starting another."""
        fields = {"task": task or uuid.uuid4().hex, "to": to, "since": since, "until": until, "rate": rate}
        body = {name: value for name, value in fields.items() if value is not None}
        reply = await self._transport.request(
            "POST", queue_path(self._vhost, queue, "redrive"), body=body, retry_sent=True
        )
        return dict(reply.payload)

    async def redrives(self, queue: str) -> list[dict[str, Any]]:
        """`queue`'s redrive tasks, the running one and the last ended, with their progress."""
        return (
            await self._transport.request("GET", queue_path(self._vhost, queue, "redrive"), retry_sent=True)
        ).payload

    async def cancel_redrive(self, queue: str, task: str) -> None:
        """Cancel a redrive task: what it had taken and not moved goes back to `queue`."""
        await self._transport.request(
            "DELETE", queue_path(self._vhost, queue, "redrive", task), retry_sent=True
        )

    async def queue(self, queue: str) -> dict[str, Any]:
        """The statistics and definition of one queue (NotFoundError for a name no queue has)."""
        reply = await self._transport.request("GET", queue_path(self._vhost, queue), retry_sent=True)
        if not isinstance(reply.payload, dict):  # `/api/queues/{x}` lists vhost x, which no queue is named
            raise NotFoundError(404, "not_found", f"no queue '{queue}': it names a vhost")
        return reply.payload

    async def queues(self) -> list[dict[str, Any]]:
        """The statistics and definitions of every queue."""
        return (await self._transport.request("GET", "/api/queues", retry_sent=True)).payload

    # Publishing

    async def publish(
        self,
        queue: str,
        messages: Publishable | Iterable[Publishable],
        *,
        publisher: str | None = None,
        seq: int | None = None,
        wait_ms: int = 0,
    ) -> list[int]:
        """Publish `messages` in one request and return their ids once a majority confirmed them.

        `publisher`/`seq` default to this client's id and next sequence number; a request that fails
        with a connection error, a timeout or a 503 is retried with the same pair, which the server
        answers with the same ids without enqueuing again. `wait_ms` (at most 30000): how long the
        server waits for room in a full reject-publish queue before it refuses the publish (the request's
        timeout grows by as much). Raises RejectedPublishError when full,
        SeqTooOldError when the seq is too old for the server to tell whether it was enqueued (it was
        not now), QuorumqError `ids_forgotten` when it was enqueued so long ago that its ids are
        forgotten, and ProtocolError when the confirm carries no ids or fewer ids than messages."""
        batch = as_message_list(messages)
        if not batch:
            return []
        body = self._publish_body(batch, publisher, seq, wait_ms)
        reply = await self._transport.request(
            "POST",
            queue_path(self._vhost, queue, "messages"),
            body=body,
            retry_sent=True,
            body_type=self._message_type,
            stream=self._stream_op("publish", queue, body),
            timeout=self._transport.timeout + wait_ms / 1000,
        )
        return confirmed_ids(reply.status, reply.payload, len(batch), body["publisher"], body["seq"])

    def _publish_body(
        self, batch: list[Publishable], publisher: str | None, seq: int | None, wait_ms: int
    ) -> dict[str, Any]:
        """A publish's body: the encoded messages, the publisher and seq (this client's id and next seq
        unless given), the wait for room when there is one."""
        body = {
            "messages": [encode_message(message, packed=self._packed) for message in batch],
            "publisher": publisher or self.publisher_id,
            "seq": next(self._publish_seq) if seq is None else seq,
        }
        if wait_ms:
            body["wait"] = wait_ms
        return body

    def publisher(self, queue: str, *, window: int = 64, batch: int = 100, wait_ms: int = 0) -> Publisher:
        """A pipelined publisher: `async with client.publisher(q) as pub: confirm = await pub.send(m)`;
        each of its publishes waits up to `wait_ms` for room in a full queue (`publish`)."""
        return Publisher(self, queue, window=window, batch=batch, wait_ms=wait_ms)

    async def publish_all(
        self,
        queue: str,
        messages: Iterable[Publishable],
        *,
        window: int = 64,
        batch: int = 100,
        sent: Callable[[int], None] | None = None,
        wait_ms: int = 0,
    ) -> list[int]:
        """Publish many messages through a pipelined Publisher; returns their ids in order. `sent(n)` is
        told of every `batch` messages handed to the publisher, and of the last ones (a progress display);
        `wait_ms` as for `publish`."""
        confirms = []
        async with self.publisher(queue, window=window, batch=batch, wait_ms=wait_ms) as pub:
            for message in messages:
                confirms.append(await pub.send(message))
                if sent is not None and len(confirms) % batch == 0:
                    sent(batch)
        if sent is not None and len(confirms) % batch:
            sent(len(confirms) % batch)
        return [confirm.result() for confirm in confirms]

    # Exchanges and bindings (RabbitMQ's, in the virtual host `/`)

    async def declare_exchange(
        self,
        name: str,
        type: ExchangeType,
        *,
        durable: bool = True,
        auto_delete: bool = False,
        internal: bool = False,
        arguments: dict[str, Any] | None = None,
    ) -> bool:
        """Declare exchange `name` of `type` (direct, fanout, topic or headers); True if it was created,
        False if it existed with the same definition. `auto_delete`: deleted once its last binding as a
        source is; `internal`: it takes publishes only from other exchanges; `arguments` may name an
        `alternate-exchange` for what it cannot route. Every exchange is replicated: `durable` is kept for
        what AMQP clients declare.

        Raises ConflictError (`precondition_failed`) if it exists with another definition, ForbiddenError
        for a reserved name (`amq.*`), BadRequestError for a bad type or argument."""
        body = {
            "type": type,
            "durable": durable,
            "auto_delete": auto_delete,
            "internal": internal,
            "arguments": arguments or {},
        }
        reply = await self._transport.request(
            "PUT", exchange_path(self._vhost, name), body=body, retry_sent=True
        )
        return reply.status == 201

    async def delete_exchange(self, name: str, *, if_unused: bool = False) -> None:
        """Delete exchange `name` and every binding from or to it (with `if_unused`, only when it is the
        source of no binding: ConflictError otherwise)."""
        params = {"if-unused": "true"} if if_unused else None
        await self._transport.request("DELETE", exchange_path(self._vhost, name), params=params)

    async def exchanges(self) -> list[dict[str, Any]]:
        """Every exchange the caller holds a permission on, the default ("") and built-in ones included:
        name, type, durable, auto_delete, internal, arguments."""
        return (
            await self._transport.request(
                "GET", exchanges_path(self._vhost), retry_sent=True, after_routing=True
            )
        ).payload

    async def exchange(self, name: str) -> dict[str, Any]:
        """One exchange's definition ("" the default exchange)."""
        return (
            await self._transport.request(
                "GET", exchange_path(self._vhost, name), retry_sent=True, after_routing=True
            )
        ).payload

    async def bind(
        self, exchange: str, queue: str, routing_key: str = "", arguments: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Bind `exchange` to `queue` with `routing_key` (and `arguments`: a headers binding's tests, with
        `x-match`); binding again with the same key and arguments changes nothing. Returns the binding:
        source, destination, destination_type, routing_key, arguments, properties_key."""
        return await self._bind(exchange, "q", queue, routing_key, arguments)

    async def bind_exchange(
        self, source: str, destination: str, routing_key: str = "", arguments: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Bind exchange `source` to exchange `destination`, as `bind` does to a queue."""
        return await self._bind(source, "e", destination, routing_key, arguments)

    async def unbind(
        self, exchange: str, queue: str, routing_key: str = "", arguments: dict[str, Any] | None = None
    ) -> None:
        """Remove the binding of `exchange` to `queue` with this routing key and these arguments
        (NotFoundError when there is none)."""
        await self._unbind(exchange, "q", queue, routing_key, arguments)

    async def unbind_exchange(
        self, source: str, destination: str, routing_key: str = "", arguments: dict[str, Any] | None = None
    ) -> None:
        """Remove the binding of exchange `source` to exchange `destination`, as `unbind` does."""
        await self._unbind(source, "e", destination, routing_key, arguments)

    async def bindings(self, *, source: str | None = None) -> list[dict[str, Any]]:
        """Every binding the caller holds a permission on the source or destination of (with `source`,
        those of that exchange), as `bind` returns them."""
        path = (
            bindings_path(self._vhost)
            if source is None
            else exchange_path(self._vhost, source, "bindings", "source")
        )
        return (await self._transport.request("GET", path, retry_sent=True, after_routing=True)).payload

    async def _bind(
        self,
        source: str,
        kind: Destination,
        destination: str,
        routing_key: str,
        arguments: dict[str, Any] | None,
    ) -> dict[str, Any]:
        body = {"routing_key": routing_key, "arguments": arguments or {}}
        path = binding_path(self._vhost, source, kind, destination)
        return (await self._transport.request("POST", path, body=body, retry_sent=True)).payload

    async def _unbind(
        self,
        source: str,
        kind: Destination,
        destination: str,
        routing_key: str,
        arguments: dict[str, Any] | None,
    ) -> None:
        """Delete the binding of these properties, named by the properties key its listing gives."""
        path = binding_path(self._vhost, source, kind, destination)
        listed = (await self._transport.request("GET", path, retry_sent=True, after_routing=True)).payload
        wanted = (routing_key, arguments or {})
        found = next((b for b in listed if (b["routing_key"], b["arguments"]) == wanted), None)
        if found is None:
            raise NotFoundError(
                404,
                "not_found",
                f"no binding of '{source}' to '{destination}' with routing key '{routing_key}'",
            )
        await self._transport.request(
            "DELETE", binding_path(self._vhost, source, kind, destination, found["properties_key"])
        )

    async def publish_to_exchange(
        self,
        exchange: str,
        messages: Publishable | Iterable[Publishable],
        routing_key: str = "",
        *,
        mandatory: bool = False,
        publisher: str | None = None,
        seq: int | None = None,
        wait_ms: int = 0,
    ) -> RoutedPublish:
        """Publish `messages` through `exchange` ("" the default exchange, which routes to the queue
        `routing_key` names) with `routing_key` (and each message's headers, for a headers exchange), and
        return what each queue reached confirmed once every one committed its copies.

        Routed on the node that takes it, once that node applied every routing change this client heard
        of (its own declares and binds included, made through any node). Retried as `publish` is, with the
        same `publisher` and `seq`, which every queue deduplicates. Messages that reach no queue are
        listed in `unroutable`, not raised: with `mandatory` (AMQP's flag) a caller that must not lose
        them reads it. Raises what `publish` raises when a queue refused its copies (the copies the other
        queues confirmed stay: a retry with the same `publisher` and `seq` adds only what is missing),
        NotFoundError for no such exchange, ForbiddenError for an internal one."""
        batch = as_message_list(messages)
        if not batch:
            return RoutedPublish({}, {}, [])
        body = self._publish_body(batch, publisher, seq, wait_ms)
        body["routing_key"] = routing_key
        if mandatory:
            body["mandatory"] = True
        frame = (
            {"op": "publish", "exchange": exchange, "vhost": self._vhost, **body} if self._stream else None
        )
        reply = await self._transport.request(
            "POST",
            exchange_path(self._vhost, exchange, "publish"),
            body=body,
            retry_sent=True,
            body_type=self._message_type,
            stream=frame,
            timeout=self._transport.timeout + wait_ms / 1000,
            after_routing=True,
        )
        return routed_publish(reply.status, reply.payload, len(batch), body["publisher"], body["seq"])

    # Consumers

    async def consume(
        self,
        queue: str,
        prefetch: int = DEFAULT_PREFETCH,
        priority: int = 0,
        durable: bool = False,
        name: str | None = None,
        timeout_ms: int | None = None,
        since: int | str | None = None,
        auto_ack: bool = False,
    ) -> str:
        """Register a consumer and return its tag (a durable consumer is named `name`).

        `timeout_ms`: the consumer timeout, how long it may hold a delivery without an ack, nack or touch
        before the server ends it and returns what it holds (default: the queue's `x-consumer-timeout`,
        else the server's, 30 minutes). `since` (epoch ms or ISO-8601): receive only messages enqueued
        at or after that time (reading a dead-letter queue from a time). `auto_ack` (AMQP's no-ack): the
        server settles what `deliveries` hands out as it hands it out; never ack or nack them.
        """
        body: dict[str, Any] = {"prefetch": prefetch, "priority": priority}
        if auto_ack:
            body["auto_ack"] = True
        if timeout_ms is not None:
            body["timeout"] = timeout_ms
        if since is not None:
            body["since"] = since
        if durable:
            body["durable"] = True
        if name is not None:
            body["name"] = name
        reply = await self._transport.request("POST", queue_path(self._vhost, queue, "consumers"), body=body)
        return _tag_from(reply.payload)

    async def _subscribe(
        self, queue: str, prefetch: int, priority: int, sink: ConsumerSink, tag: str | None, via: str | None
    ) -> tuple[str, str | None, int | None]:
        """Register a consumer for a Subscription (or, with `tag`, carry on with that one on its queue's
        leader), on a stream when this client uses them, first through the node `via` when given: its
        tag, the node whose stream delivers to `sink` (None: it is polled over HTTP), and how long it may
        hold a delivery untouched (ms; None from a server that does not say)."""
        body: dict[str, Any] = {"prefetch": prefetch, "priority": priority}
        frame = None if tag is None else {"tag": tag}
        reply = await self._transport.request(
            "POST",
            queue_path(self._vhost, queue, "consumers"),
            body=body,
            stream=self._stream_op("consume", queue, {**body, **(frame or {})}),
            sink=sink,
            prefer=via,
        )
        answer = reply.payload if isinstance(reply.payload, dict) else {}
        return _tag_from(reply.payload), answer.get("stream"), _optional_int(answer.get("hold_ms"))

    async def deliveries(
        self, queue: str, tag: str, max: int = 100, wait: float = 1.0
    ) -> list[IncomingMessage]:
        """Long-poll up to `max` deliveries for consumer `tag`, waiting up to `wait` seconds for one; each
        settles itself through the consumer (`await m.ack()`, `async with m.process(): ...`)."""
        return decode_deliveries(await self._poll(queue, tag, max, wait), self._consumer_messages(queue, tag))

    async def _poll(self, queue: str, tag: str, max: int, wait: float) -> Any:
        """One long-poll of consumer `tag` over HTTP: the answer's payload (a POST, or the GET a node older
        than the POST form takes: it answers the POST 405, which nothing was taken for)."""
        while True:
            try:
                reply = await self._transport.request(
                    self._poll_method,
                    queue_path(self._vhost, queue, "consumers", tag, "deliveries"),
                    params={"max": str(max), "wait": str(wait)},
                    timeout=self._transport.timeout + wait,
                    answer_type=self._message_type,
                )
            except QuorumqError as exc:
                if exc.status != 405 or self._poll_method == "GET":
                    raise
                self._poll_method = "GET"
                continue
            return reply.payload

    def _consumer_messages(
        self, queue: str, tag: str, via: str | None = None, hold_ms: int | None = None
    ) -> Callable[..., IncomingMessage]:
        """What makes the IncomingMessages of consumer `tag`: settled and touched as that consumer (on the
        stream of the node `via` when given, else over HTTP), kept held by a HoldKeeper of their own."""

        async def ack(ids: list[int]) -> None:
            await self._settle_consumer(queue, tag, "ack", {"ids": ids}, via)

        async def nack(
            ids: list[int],
            requeue: bool = True,
            *,
            failed: bool = True,
            reason: str | None = None,
            delay_ms: int | None = None,
        ) -> None:
            body = nack_body(ids, requeue, failed, reason, delay_ms)
            await self._settle_consumer(queue, tag, "nack", body, via)

        async def touch(ids: list[int]) -> int:
            return await self._touch_consumer(queue, tag, ids, via)

        return settled_through(ack, nack, HoldKeeper(touch, hold_ms))

    async def ack(self, queue: str, tag: str, ids: Iterable[int]) -> None:
        """Settle deliveries of consumer `tag`."""
        await self._settle_consumer(queue, tag, "ack", {"ids": list(ids)})

    async def nack(
        self,
        queue: str,
        tag: str,
        ids: Iterable[int],
        requeue: bool = True,
        *,
        failed: bool = True,
        reason: str | None = None,
        delay_ms: int | None = None,
    ) -> None:
        """Return deliveries of consumer `tag` (requeue) or discard/dead-letter them (requeue=False).

        A return counts a failed delivery toward the queue's delivery limit unless `failed=False` (a
        plain return: "not now", not "cannot") and waits `delay_ms` before it is ready again when given
        (0: at once, whatever the queue's `x-delayed-retry-*`; JetStream's NakWithDelay); a discard may
        give a `reason` (up to 256 characters), kept in the dead letter's `x-death` as `reason-text`."""
        body = nack_body(list(ids), requeue, failed, reason, delay_ms)
        await self._settle_consumer(queue, tag, "nack", body)

    async def touch(self, queue: str, tag: str, ids: Iterable[int]) -> int:
        """Extend the hold of deliveries of consumer `tag`: each counts from now as just handed out (for
        the consumer timeout and the lease). Returns how long they may now be held untouched, in ms."""
        return await self._touch_consumer(queue, tag, list(ids))

    async def _touch_consumer(self, queue: str, tag: str, ids: list[int], via: str | None = None) -> int:
        """Touch for consumer `tag`: on the stream of the node `via` when given, else over HTTP."""
        body = {"ids": ids}
        frame = self._stream_op("touch", queue, {"tag": tag, **body}) if via else None
        path = queue_path(self._vhost, queue, "consumers", tag, "touch")
        reply = await self._transport.request("POST", path, body=body, stream=frame, prefer=via)
        return _hold_from(reply.payload)

    async def cancel(self, queue: str, tag: str) -> None:
        """Cancel consumer `tag`; its unacked messages return to the queue."""
        await self._cancel(queue, tag)

    async def _settle_consumer(
        self, queue: str, tag: str, kind: str, body: dict[str, Any], via: str | None = None
    ) -> None:
        """Ack or nack (`kind`) for consumer `tag`: on the stream of the node `via` (the one delivering
        to the consumer) when given, else over HTTP."""
        frame = self._stream_op(kind, queue, {"tag": tag, **body}) if via else None
        path = queue_path(self._vhost, queue, "consumers", tag, kind)
        await self._transport.request("POST", path, body=body, stream=frame, prefer=via)

    async def _cancel(self, queue: str, tag: str, via: str | None = None) -> None:
        """Cancel consumer `tag`, on the stream of the node `via` when given, else over HTTP."""
        frame = self._stream_op("cancel", queue, {"tag": tag}) if via else None
        await self._transport.request(
            "DELETE", queue_path(self._vhost, queue, "consumers", tag), stream=frame, prefer=via
        )

    def _stream_op(self, op: str, queue: str, fields: dict[str, Any]) -> dict[str, Any] | None:
        """Operation `op` on `queue` as a stream frame, when this client uses streams."""
        return {"op": op, "queue": queue, **fields} if self._stream else None

    def subscribe(
        self, queue: str, prefetch: int = DEFAULT_PREFETCH, *, priority: int = 0, wait: float = 1.0
    ) -> Subscription:
        """A consumer to iterate: `async with client.subscribe(q) as sub: async for d in sub: ...`."""
        return Subscription(self, queue, prefetch=prefetch, priority=priority, wait=wait)

    # One-shot get

    async def get(
        self,
        queue: str,
        count: int = 1,
        ack: Literal["manual", "auto"] = "manual",
        since: int | str | None = None,
    ) -> list[Delivery]:
        """Take up to `count` ready messages (basic.get); manual ones are IncomingMessages that settle
        themselves (or are settled with ack_got/nack_got).

        `since` (epoch ms or ISO-8601): only messages enqueued at or after that time."""
        body: dict[str, Any] = {"count": count, "ack": ack}
        if since is not None:
            body["since"] = since
        reply = await self._transport.request(
            "POST", queue_path(self._vhost, queue, "get"), body=body, answer_type=self._message_type
        )
        if ack == "auto":
            return decode_deliveries(reply.payload, Delivery)
        got = settled_through(
            functools.partial(self.ack_got, queue),
            functools.partial(self.nack_got, queue),
            HoldKeeper(functools.partial(self.touch_got, queue)),
        )
        return decode_deliveries(reply.payload, got)

    async def ack_got(self, queue: str, ids: Iterable[int]) -> str | None:
        """Settle messages taken by `get` with manual ack; the server's warning when some of them were
        not held (settled already, or returned by the consumer timeout), else None."""
        return await self._settle(queue_path(self._vhost, queue, "ack"), {"ids": list(ids)})

    async def touch_got(self, queue: str, ids: Iterable[int]) -> int:
        """Extend the hold of messages taken by `get` with manual ack (as `touch` for a consumer)."""
        reply = await self._transport.request(
            "POST", queue_path(self._vhost, queue, "touch"), body={"ids": list(ids)}
        )
        return _hold_from(reply.payload)

    async def nack_got(
        self,
        queue: str,
        ids: Iterable[int],
        requeue: bool = True,
        *,
        failed: bool = True,
        reason: str | None = None,
        delay_ms: int | None = None,
    ) -> str | None:
        """Return (or discard/dead-letter) messages taken by `get` with manual ack (`failed`, `reason`
        and `delay_ms` as for `nack`); the warning as for `ack_got`."""
        body = nack_body(list(ids), requeue, failed, reason, delay_ms)
        return await self._settle(queue_path(self._vhost, queue, "nack"), body)

    async def browse(
        self, queue: str, from_: int = 0, to: int | None = None, limit: int = 1000
    ) -> list[Delivery]:
        """Up to `limit` (<= 10000) of the messages `queue` holds, ready or checked out, with ids from
        `from_` to below `to`, lowest id first, without consuming them (page with from_ = last id + 1)."""
        params = {"from": str(from_), "limit": str(limit)}
        if to is not None:
            params["to"] = str(to)
        reply = await self._transport.request(
            "GET",
            queue_path(self._vhost, queue, "messages"),
            params=params,
            retry_sent=True,
            answer_type=self._message_type,
        )
        return decode_deliveries(reply.payload, Delivery)

    async def peek(self, queue: str, position: int) -> Delivery | None:
        """The ready message of `queue` at 1-based `position` in delivery order, without consuming it;
        None when the queue has fewer ready messages (NotFoundError when there is no such queue)."""
        try:
            reply = await self._transport.request(
                "GET",
                queue_path(self._vhost, queue, "messages", "peek"),
                params={"position": str(position)},
                retry_sent=True,
                answer_type=self._message_type,
            )
        except NotFoundError as exc:
            if exc.code == NO_MESSAGE:
                return None
            raise
        return decode_delivery(reply.payload, Delivery)

    async def consumer_log(self, queue: str, name: str, from_: int, to: int) -> list[Delivery]:
        """A durable consumer's unsettled deliveries numbered from `from_` to `to` (non-destructive)."""
        reply = await self._transport.request(
            "GET",
            queue_path(self._vhost, queue, "consumers", name, "log"),
            params={"from": str(from_), "to": str(to)},
            retry_sent=True,
            answer_type=self._message_type,
        )
        return decode_deliveries(reply.payload, Delivery)

    async def durable_checkout(
        self,
        queue: str,
        name: str,
        max: int,
        *,
        since: int | str | None = None,
        max_bytes: int | None = None,
    ) -> SequencePosition:
        """Check out up to `max` (<= 10000) more ready messages to durable consumer `name`: with `since`
        (epoch ms or ISO-8601) only messages enqueued at or after it, with `max_bytes` only while their
        bodies add up to at most that many bytes (the first one always).

        A retry after a lost answer may check out more; the position returned is always the truth."""
        body: dict[str, Any] = {"max": max}
        if since is not None:
            body["since"] = since
        if max_bytes is not None:
            body["max_bytes"] = max_bytes
        reply = await self._transport.request(
            "POST", queue_path(self._vhost, queue, "consumers", name, "checkout"), body=body, retry_sent=True
        )
        return _position_from(reply.payload)

    async def durable_settle(self, queue: str, name: str, below: int) -> SequencePosition:
        """Settle every delivery of durable consumer `name` numbered below `below` (idempotent)."""
        reply = await self._transport.request(
            "POST",
            queue_path(self._vhost, queue, "consumers", name, "settle"),
            body={"below": below},
            retry_sent=True,
        )
        return _position_from(reply.payload)

    # Membership and cluster

    async def consumers(self, queue: str) -> Any:
        """The queue's consumers (durable ones last): tag (its first characters only; a durable consumer's
        whole name, `NAME~OWNER`), prefetch, priority, active, unacknowledged, timeout_ms, since_ms,
        auto_ack, durable."""
        reply = await self._transport.request(
            "GET", queue_path(self._vhost, queue, "consumers"), retry_sent=True
        )
        return reply.payload

    async def members(self, queue: str) -> Any:
        """The queue's replica set, as the server reports it."""
        return (
            await self._transport.request("GET", queue_path(self._vhost, queue, "members"), retry_sent=True)
        ).payload

    async def add_member(self, queue: str, node: str) -> Any:
        """Add a replica of `queue` on `node`."""
        return (
            await self._transport.request(
                "POST", queue_path(self._vhost, queue, "members"), body={"node": node}
            )
        ).payload

    async def delete_member(self, queue: str, node: str) -> Any:
        """Remove the replica of `queue` on `node`."""
        return (
            await self._transport.request("DELETE", queue_path(self._vhost, queue, "members", node))
        ).payload

    async def checkpoint(self, queue: str, node: str) -> Any:
        """Make `node`'s replica of `queue` take a snapshot now (RabbitMQ's force_checkpoint); its status."""
        path = queue_path(self._vhost, queue, "members", node, "checkpoint")
        return (await self._transport.request("POST", path, retry_sent=True)).payload

    async def transfer_leader(self, queue: str, node: str) -> Any:
        """Hand the leadership of `queue` to its voting member `node` (no membership change)."""
        return (
            await self._transport.request(
                "POST", queue_path(self._vhost, queue, "leader"), body={"node": node}
            )
        ).payload

    async def forget_node(self, node: str) -> None:
        """Remove a permanently lost (stopped) node from the cluster."""
        await self._transport.request("DELETE", "/api/nodes/" + quote(node, safe=""))

    async def nodes(self) -> list[dict[str, Any]]:
        """Every cluster member: name, http, raft, status."""
        return (await self._transport.request("GET", "/api/nodes", retry_sent=True)).payload

    async def health(self) -> dict[str, Any]:
        """The answering node's health report, also when it answers 503 because it is not ready."""
        reply = await self._transport.request("GET", "/api/health", retry_sent=True, accept=_NOT_READY)
        return reply.payload

    async def metrics_text(self) -> str:
        """The answering node's Prometheus metrics, as text."""
        return (await self._transport.request("GET", "/metrics", retry_sent=True)).payload

    async def whoami(self) -> dict[str, Any]:
        """The caller's name, tags and permissions as the cluster sees them."""
        return (await self._transport.request("GET", "/api/whoami", retry_sent=True)).payload

    async def users(self) -> list[dict[str, Any]]:
        """Every user with tags and permissions (administrators only)."""
        return (await self._transport.request("GET", "/api/users", retry_sent=True)).payload

    async def put_user(
        self, name: str, password: str | None = None, tags: Sequence[str] | None = None
    ) -> bool:
        """Create a user (a password is required) or update one; True when it was created."""
        body: dict[str, Any] = {}
        if password is not None:
            body["password"] = password
        if tags is not None:
            body["tags"] = list(tags)
        reply = await self._transport.request("PUT", _user_path(name), body=body, retry_sent=True)
        return reply.status == 201

    async def delete_user(self, name: str) -> None:
        """Delete a user."""
        await self._transport.request("DELETE", _user_path(name))

    async def set_permissions(
        self, name: str, *, configure: str = "", write: str = "", read: str = ""
    ) -> None:
        """Set a user's configure/write/read regexes on queue and exchange names ("" grants nothing), in
        this client's vhost."""
        body = {"configure": configure, "write": write, "read": read}
        if self._vhost == routing_paths.DEFAULT_VHOST:  # the path every version serves
            path = _user_path(name, "permissions")
        else:
            path = permission_path(self._vhost, name)
        await self._transport.request("PUT", path, body=body, retry_sent=True)

    async def vhosts(self) -> list[dict[str, Any]]:
        """The vhosts the caller holds permissions in (all, for administrators): name, description, tags."""
        return (await self._transport.request("GET", "/api/vhosts", retry_sent=True)).payload

    async def declare_vhost(self, name: str, *, description: str = "", tags: Sequence[str] = ()) -> bool:
        """Create vhost `name` or update its description and tags (administrators); True if created."""
        body = {"description": description, "tags": list(tags)}
        path = "/api/vhosts/" + quote(name, safe="")
        reply = await self._transport.request("PUT", path, body=body, retry_sent=True)
        return reply.status == 201

    async def delete_vhost(self, name: str) -> None:
        """Delete vhost `name` with its exchanges, bindings, policies and permissions (ConflictError
        while it holds a queue)."""
        await self._transport.request("DELETE", "/api/vhosts/" + quote(name, safe=""))

    async def policies(self, *, operator: bool = False) -> list[dict[str, Any]]:
        """Every policy of every vhost (with `operator`, every operator policy): vhost, name, pattern,
        definition and priority (administrators only)."""
        path = "/api/operator-policies" if operator else "/api/policies"
        return (await self._transport.request("GET", path, retry_sent=True)).payload

    async def set_policy(
        self,
        name: str,
        pattern: str,
        definition: dict[str, Any],
        *,
        priority: int = 0,
        operator: bool = False,
    ) -> bool:
        """Create or replace policy `name` of this client's vhost: its queues whose name `pattern` matches
        (anywhere, as in RabbitMQ) apply `definition` (policy keys such as `max-length`); with `operator`,
        the operator policy `name`, whose limits apply over the queues' own and their policy's. True when
        it was created."""
        body = {"pattern": pattern, "definition": definition, "priority": priority}
        path = _policy_path(self._vhost, name, operator)
        reply = await self._transport.request("PUT", path, body=body, retry_sent=True)
        return reply.status == 201

    async def clear_policy(self, name: str, *, operator: bool = False) -> None:
        """Remove policy `name` (with `operator`, the operator policy): its queues return to their
        declared arguments."""
        await self._transport.request("DELETE", _policy_path(self._vhost, name, operator))

    async def create_token(self, ttl_s: int | None = None) -> tuple[str, int]:
        """A bearer token for the caller and its expiry (ms since the epoch)."""
        body = {"ttl_s": ttl_s} if ttl_s is not None else {}
        payload = (await self._transport.request("POST", "/api/tokens", body=body)).payload
        return payload["token"], payload["expires_ms"]

    async def _settle(self, path: str, body: dict[str, Any]) -> str | None:
        payload = (await self._transport.request("POST", path, body=body)).payload
        warning = payload.get("warning") if isinstance(payload, dict) else None
        return None if warning is None else str(warning)


def _tag_from(payload: Any) -> str:
    try:
        return str(payload["consumer"])
    except (KeyError, TypeError) as exc:
        raise QuorumqError(0, "bad_response", f"consume answer without a tag: {payload!r}") from exc


def _hold_from(payload: Any) -> int:
    hold = _optional_int(payload.get("hold_ms") if isinstance(payload, dict) else None)
    if hold is None:
        raise QuorumqError(0, "bad_response", f"touch answer without hold_ms: {payload!r}")
    return hold


def _optional_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _position_from(payload: Any) -> SequencePosition:
    try:
        return SequencePosition(int(payload["settled"]), int(payload["end"]), int(payload.get("bytes", 0)))
    except (KeyError, TypeError, ValueError) as exc:
        raise QuorumqError(0, "bad_response", f"expected a sequence position, got {payload!r}") from exc


def _count_from(payload: Any, key: str) -> int:
    """The count an answer reports, as `{key: n}` or a bare number (0 for an empty 204 answer)."""
    if payload is None:
        return 0
    value: Any = payload.get(key) if isinstance(payload, dict) else payload
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise QuorumqError(0, "bad_response", f"expected a {key!r} count, got {payload!r}") from exc
