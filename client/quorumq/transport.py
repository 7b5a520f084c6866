"""Sending one API request to a cluster: node failover, leader hints, retries (quorumq.retry), one
deadline."""

import asyncio
import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import aiohttp
import msgpack
from yarl import URL

from quorumq.attempt_failures import ConnectFailed, NoAnswer
from quorumq.auth import ClientCredentials
from quorumq.errors import (
    NoNodeAvailableError,
    OutcomeUnknownError,
    OverloadedError,
    QuorumqError,
    ResourceAlarmError,
    TransportError,
    error_from_response,
)
from quorumq.fork import ForkSafeConnector, ProcessOwner
from quorumq.node_streams import NodeStreams
from quorumq.node_watch import NodeWatch
from quorumq.retry import RetryableFailure, retrying
from quorumq.routing_revision import RoutingRevision
from quorumq.stream import ConsumerSink

DEFAULT_UNRESPONSIVE_AFTER = 0.5
RESOURCE_ALARM_PAUSE_S = 1.0  # a publish held back by a resource alarm is tried again after this
OVERLOADED_PAUSE_S = 1.0  # ... by an overloaded leader whose answer gives no Retry-After
JSON = "application/json"
MSGPACK = "application/msgpack"


def normalize_node(node: str) -> str:
    """A node's base URL: `HOST:PORT` gains `http://`; a trailing slash is dropped."""
    text = node.strip().rstrip("/")
    if "://" not in text:
        text = "http://" + text
    url = URL(text)
    if url.scheme not in ("http", "https") or not url.host or url.path not in ("", "/"):
        raise ValueError(f"not a node address (HOST:PORT or http://HOST:PORT): {node!r}")
    return text


class _Body:
    """A request's body, encoded once for every HTTP attempt (not at all when every attempt goes over a
    stream), and the headers naming its format."""

    def __init__(self, body: Any, body_type: str, answer_type: str | None) -> None:
        self.headers = {"Accept": answer_type} if answer_type else {}
        self._body = body
        self._type = body_type
        if body is not None:
            self.headers["Content-Type"] = body_type

    @functools.cached_property
    def data(self) -> bytes | None:
        """The encoded body (None without one)."""
        if self._body is None:
            return None
        return msgpack.packb(self._body) if self._type == MSGPACK else json.dumps(self._body).encode()


@dataclass
class _Pending:
    """One request across its attempts: what it sends, its deadline, and where its next attempt goes."""

    method: str
    path: str
    body: _Body
    params: Mapping[str, str] | None
    retry_sent: bool
    accept: frozenset[int]
    deadline: float
    stream: Mapping[str, Any] | None = None
    sink: ConsumerSink | None = None
    after_routing: bool = False
    hinted: str | None = None
    unreachable: set[str] = field(default_factory=set)
    last_error: QuorumqError | None = None
    uncertain: QuorumqError | None = (
        None  # an attempt that may have taken effect (no answer, outcome_unknown)
    )

    def timed_out(self) -> QuorumqError:
        """What the request raises when its time is up: its last error, else a timeout."""
        return self.last_error or TransportError(
            0, "timeout", f"{self.method} {self.path}: no answer in time"
        )


class Reply(NamedTuple):
    """A successful (or accepted) answer: its status and its parsed body (JSON, text, or None for 204)."""

    status: int
    payload: Any


class NodeTransport:
    """Sends requests to whichever node answers, following leader hints, within a per-request deadline.

    A node that refuses (or times out) the connection is skipped for the next one, round-robin, until
    every node has failed; a 503 is retried after a full-jitter backoff (quorumq.retry), on the
    hinted leader when the answer names one, else on the next node. Requests flagged `retry_sent` (reads
    and deduplicated publishes) are also retried, on the next node, when a sent request times out or
    loses its connection, or when the node stops answering: once such a request has waited
    `unresponsive_after` and the node has said nothing else for as long, the node's health is checked
    (GET /api/health, any answer within `unresponsive_after` will do) and again whenever it has been
    quiet for `unresponsive_after` again; a node that fails the check is left for the next one. One
    watch per node does this for all its requests (quorumq.node_watch). A slow node that is alive is
    waited for, so a slow request is not multiplied across nodes.
    With `stream`, a request that has a form on the streaming connection is sent over the node's stream
    (quorumq.node_streams) instead, under the same policy; a node that offers none gets it over HTTP.
    It remembers the highest routing revision a node's answer named (quorumq.routing_revision) and sends
    it with the requests flagged `after_routing` (publishes to exchanges, listings of exchanges and
    bindings).
    A transport serves only the process that created it: in a forked child it raises ForkedClientError
    and leaves the parent's connections alone (quorumq.fork).
    """

    def __init__(
        self,
        nodes: Sequence[str],
        *,
        timeout: float,
        connect_timeout: float,
        unresponsive_after: float = DEFAULT_UNRESPONSIVE_AFTER,
        session: aiohttp.ClientSession | None,
        credentials: ClientCredentials,
        stream: bool = False,
        vhost: str = "/",
    ) -> None:
        if isinstance(nodes, str):
            nodes = [nodes]
        self.nodes = [normalize_node(node) for node in nodes]
        if not self.nodes:
            raise ValueError("at least one node is required")
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.unresponsive_after = unresponsive_after
        self._credentials = credentials
        self._session = session
        self._owns_session = session is None
        self._owner = ProcessOwner("quorumq.Client")
        self._current = 0
        self._watches: dict[str, NodeWatch] = {}
        self._routing_revision = RoutingRevision()
        self._streams = (
            NodeStreams(self._session_for_loop, credentials, self._watch, vhost) if stream else None
        )

    @property
    def current_node(self) -> str:
        """The node the next request goes to first (the last one that answered)."""
        return self.nodes[self._current]

    async def close(self) -> None:
        """Close the streams, and the HTTP session if this transport created it."""
        for watch in self._watches.values():
            watch.close()
        if self._streams is not None:
            await self._streams.close()
        if self._owns_session and self._session is not None:
            await self._session.close()
            self._session = None

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        timeout: float | None = None,
        retry_sent: bool = False,
        accept: frozenset[int] = frozenset(),
        body_type: str = JSON,
        answer_type: str | None = None,
        stream: Mapping[str, Any] | None = None,
        sink: ConsumerSink | None = None,
        prefer: str | None = None,
        after_routing: bool = False,
    ) -> Reply:
        """Send `method path` (with `body` as JSON or msgpack, `body_type`) and return the first 2xx answer.

        `answer_type` is the format asked for (Accept), if any; an answer is decoded by the type it declares.
        Statuses in `accept` are answers too, not errors. Raises the QuorumqError subclass matching any
        other non-2xx answer, NoNodeAvailableError when no node
        accepts a connection, TransportError when the deadline passes without an answer, and
        ForkedClientError in a process forked from the one that created this transport.

        `stream` is the same request as an operation of the streaming connection (its `op` and fields),
        sent that way when this transport uses streams (a `consume` registers `sink` for its deliveries);
        `prefer` is the node to try first (the one whose stream holds a consumer); `after_routing` asks the
        node to act only once it applied the routing changes this transport heard of."""
        self._owner.check()
        deadline = asyncio.get_running_loop().time() + (self.timeout if timeout is None else timeout)
        encoded = _Body(body, body_type, answer_type)
        pending = _Pending(
            method, path, encoded, params, retry_sent, accept, deadline, stream, sink, after_routing, prefer
        )
        return await retrying(functools.partial(self._try_once, pending), deadline)

    async def _try_once(self, pending: "_Pending") -> Reply:
        """One attempt at `pending`; RetryableFailure when another attempt may succeed where it failed."""
        remaining = pending.deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            raise pending.timed_out()
        base = pending.hinted or self.current_node
        try:
            status, payload = await self._send(pending, base, remaining)
        except ConnectFailed:
            pending.unreachable.add(base)
            self._move_on(pending)
            if pending.unreachable.issuperset(self.nodes):
                raise NoNodeAvailableError(self.nodes) from None
            raise RetryableFailure(pending.timed_out(), at_once=True) from None
        except NoAnswer as exc:
            unanswered = TransportError(0, exc.code, f"{pending.method} {base}{pending.path}: {exc.reason}")
            if not pending.retry_sent:
                raise unanswered from None
            pending.last_error = pending.uncertain = unanswered
            self._move_on(pending)
            raise RetryableFailure(unanswered) from None
        pending.unreachable.clear()
        if 200 <= status < 300 or status in pending.accept:
            return Reply(status, payload)
        error = error_from_response(status, payload)
        if status != 503 or (isinstance(error, OutcomeUnknownError) and not pending.retry_sent):
            raise error  # an outcome_unknown request may have taken effect: resend only what is safe
        if isinstance(error, OutcomeUnknownError):
            pending.uncertain = error
        pending.last_error = pending.uncertain or error  # a later refusal does not make it certain
        pause_s = _held_back_pause_s(error)
        if pause_s:
            raise RetryableFailure(pending.last_error, pause_s=pause_s)
        pending.hinted = _hint(error, base)
        if pending.hinted is None and base == self.current_node:
            self._advance()  # this node knows no leader (it may be cut off): ask the next one
        raise RetryableFailure(pending.last_error)

    async def _send(self, pending: "_Pending", base: str, remaining: float) -> tuple[int, Any]:
        """One attempt at `pending` on `base`: over its stream when the request has a stream form and the
        node takes one, else over HTTP. A `retry_sent` request is under the node's watch
        (quorumq.node_watch): NoAnswer("unresponsive") when the node stops answering."""
        revision = self._routing_revision if pending.after_routing else None
        if pending.stream is not None and self._streams is not None:
            connection = await self._streams.to(base, min(self.connect_timeout, remaining))
            if connection is not None:
                frame = pending.stream if revision is None else revision.frame(pending.stream)
                return await connection.call(frame, remaining, pending.sink, watched=pending.retry_sent)
        headers = {} if revision is None else revision.headers()
        attempt = self._attempt(
            pending.method, base, pending.path, pending.body, pending.params, remaining, headers
        )
        if not pending.retry_sent:
            return await attempt
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[tuple[int, Any]] = loop.create_future()
        task = asyncio.ensure_future(attempt)
        task.add_done_callback(functools.partial(_pass_on, answer))
        watch = self._watch(base)
        watch.track(answer, loop.time(), math.inf, watched=True)
        try:
            return await answer
        finally:
            watch.untrack(answer)
            task.cancel()

    def _move_on(self, pending: "_Pending") -> None:
        """After a failed attempt: from the hinted leader back to the current node, else to the next one."""
        if pending.hinted is None:
            self._advance()
        pending.hinted = None

    def _watch(self, base: str) -> NodeWatch:
        """The watch of the node at `base` (one per node, made on first use)."""
        watch = self._watches.get(base)
        if watch is None:
            probe = functools.partial(self._health_answer, base)
            watch = self._watches[base] = NodeWatch(base, self.unresponsive_after, probe)
        return watch

    async def _health_answer(self, base: str) -> bool:
        """Whether `base` answers GET /api/health (any status) within `unresponsive_after`."""
        timeout = aiohttp.ClientTimeout(total=self.unresponsive_after)
        try:
            async with self._session_for_loop().get(
                base + "/api/health", timeout=timeout, ssl=self._credentials.ssl
            ) as response:
                await response.read()
                return True
        except (aiohttp.ClientError, TimeoutError):
            return False

    def _advance(self) -> None:
        self._current = (self._current + 1) % len(self.nodes)

    def _session_for_loop(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(connector=ForkSafeConnector())
        return self._session

    async def _attempt(
        self,
        method: str,
        base: str,
        path: str,
        body: _Body,
        params: Mapping[str, str] | None,
        remaining: float,
        headers: Mapping[str, str],
    ) -> tuple[int, Any]:
        timeout = aiohttp.ClientTimeout(total=remaining, sock_connect=min(self.connect_timeout, remaining))
        try:
            async with self._session_for_loop().request(
                method,
                URL(base + path, encoded=True),
                data=body.data,
                params=params,
                timeout=timeout,
                headers={**self._credentials.headers, **body.headers, **headers},
                ssl=self._credentials.ssl,
            ) as response:
                self._watch(base).heard(asyncio.get_running_loop().time())
                self._routing_revision.heard(response.headers)
                payload = await _read_payload(response)
                retry_after = response.headers.get("Retry-After")
                if retry_after is not None and isinstance(payload, dict):  # as a stream's error frame has it
                    payload.setdefault("retry_after", retry_after)
                return response.status, payload
        except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as exc:
            raise ConnectFailed(str(exc)) from exc
        except TimeoutError as exc:
            raise NoAnswer("timeout", "timed out waiting for the answer") from exc
        except aiohttp.ClientError as exc:
            raise NoAnswer("connection_lost", str(exc) or type(exc).__name__) from exc


def _pass_on(answer: "asyncio.Future[tuple[int, Any]]", attempt: "asyncio.Future[tuple[int, Any]]") -> None:
    """Hand the outcome of `attempt` to `answer`, unless the watch already ended it."""
    if attempt.cancelled():
        answer.cancel()
        return
    failure = attempt.exception()  # retrieved either way
    if answer.done():
        return
    if failure is not None:
        answer.set_exception(failure)
    else:
        answer.set_result(attempt.result())


def _held_back_pause_s(error: QuorumqError) -> float:
    """How long a publish the node held back waits before it is tried again (0: it was not held back):
    an overloaded leader's Retry-After, a resource alarm's RESOURCE_ALARM_PAUSE_S (its Retry-After, 5 s,
    would keep publishers away long after the alarm clears)."""
    if isinstance(error, OverloadedError):
        return OVERLOADED_PAUSE_S if error.retry_after_s is None else error.retry_after_s
    if isinstance(error, ResourceAlarmError):
        return RESOURCE_ALARM_PAUSE_S
    return 0.0


def _hint(error: QuorumqError, base: str) -> str | None:
    """The hinted leader's base URL when a 503 names one other than the node that answered."""
    if not error.leader_http:
        return None
    try:
        hinted = normalize_node(error.leader_http)
    except ValueError:
        return None
    return hinted if hinted != base else None


async def _read_payload(response: aiohttp.ClientResponse) -> Any:
    if response.status == 204:
        return None
    if response.content_type == MSGPACK:
        try:
            return msgpack.unpackb(await response.read(), raw=False)
        except (ValueError, TypeError, msgpack.UnpackException) as exc:
            raise NoAnswer("bad_response", f"invalid msgpack in answer: {exc}") from exc
    text = await response.text()
    if response.content_type != "application/json":
        return text
    try:
        return json.loads(text) if text else None
    except ValueError as exc:
        raise NoAnswer("bad_response", f"invalid JSON in answer: {exc}") from exc
