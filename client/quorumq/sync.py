"""SyncClient: the Client's methods as blocking calls, for plain code (CLI, Spark executors, WSGI)."""

import functools
import itertools
import os
import ssl
import threading
from collections.abc import Callable, Coroutine, Iterable, Sequence
from types import MethodType, TracebackType
from typing import Any, Concatenate, Generic, NamedTuple, ParamSpec, Self, TypeVar, overload

from quorumq.auth import Auth
from quorumq.client import Client, Wire
from quorumq.loop import LoopThread
from quorumq.messages import Publishable
from quorumq.sync_publisher import SyncPublisher
from quorumq.transport import DEFAULT_UNRESPONSIVE_AFTER

T = TypeVar("T")
P = ParamSpec("P")
CALL_TIMEOUT_ALLOWANCE = 80.0
"""How much longer than one request's `timeout` a call may take by default: room for the longest long-poll
wait a node accepts (60 s) and for retries."""


class _InProcess(NamedTuple):
    """What a SyncClient runs on in one process: its loop thread and its async client."""

    pid: int
    loop: LoopThread
    client: Client


class _Blocking(Generic[P, T]):
    """A SyncClient method made of a Client coroutine method: same arguments (type checkers see them),
    its result returned once the call ends on the SyncClient's loop, within call_timeout."""

    def __init__(self, method: Callable[Concatenate[Client, P], Coroutine[Any, Any, T]]) -> None:
        name = method.__name__

        @functools.wraps(method)
        def blocking(sync: "SyncClient", *args: P.args, **kwargs: P.kwargs) -> T:
            here = sync._in_this_process()
            return sync._call(here, method(here.client, *args, **kwargs), name)

        self._blocking = blocking

    @overload
    def __get__(self, sync: None, owner: type) -> "Callable[Concatenate[SyncClient, P], T]": ...

    @overload
    def __get__(self, sync: "SyncClient", owner: type) -> Callable[P, T]: ...

    def __get__(
        self, sync: "SyncClient | None", owner: type
    ) -> "Callable[Concatenate[SyncClient, P], T] | Callable[P, T]":
        if sync is None:
            return self._blocking
        return MethodType(self._blocking, sync)


class SyncClient:
    """A blocking Client: every call runs on one private event loop in a daemon thread.

    It has the same request methods as Client (same arguments, same errors) and is safe to share
    between threads. Besides each request's `timeout`, every call as a whole (its retries, a long-poll's
    wait, a publisher's flush) ends within `call_timeout` seconds: past it the call is
    cancelled and raises CallTimeoutError (a TransportError). It defaults to `timeout` plus
    CALL_TIMEOUT_ALLOWANCE (90 s for the default `timeout`). A `publish_all` is the exception: its
    deadline is per step (each batch of sends, the final flush), so a long one is not cut off midway.

    It survives fork(): the first call in a forked child (gunicorn `--preload`, Celery prefork,
    multiprocessing) builds the child's own loop thread, HTTP session and publisher id, and leaves the
    parent's to the parent. Use as a context manager or call `close()`.
    """

    def __init__(
        self,
        nodes: Sequence[str],
        *,
        timeout: float = 10.0,
        connect_timeout: float = 2.0,
        unresponsive_after: float = DEFAULT_UNRESPONSIVE_AFTER,
        call_timeout: float | None = None,
        auth: Auth | None = None,
        token: str | None = None,
        tls: ssl.SSLContext | bool | None = None,
        wire: Wire = "msgpack",
        stream: bool | None = None,
        vhost: str = "/",
    ) -> None:
        if call_timeout is None:
            call_timeout = timeout + CALL_TIMEOUT_ALLOWANCE
        if not call_timeout > 0:
            raise ValueError(f"call_timeout must be a positive number of seconds, not {call_timeout!r}")
        self.call_timeout = call_timeout
        self._new_client = functools.partial(
            Client,
            nodes,
            timeout=timeout,
            connect_timeout=connect_timeout,
            unresponsive_after=unresponsive_after,
            auth=auth,
            token=token,
            tls=tls,
            wire=wire,
            stream=stream,
            vhost=vhost,
        )
        # One lock per process, created on first use there: a lock held by another thread at fork()
        # would stay held forever in the child (dict.setdefault is atomic).
        self._locks: dict[int, threading.Lock] = {}
        self._closed = False
        self._here = self._start()

    @property
    def publisher_id(self) -> str:
        """The publisher id sent with every publish of this client (in this process: a forked child's
        differs from its parent's, since publisher ids and sequence numbers deduplicate publishes)."""
        return self._in_this_process().client.publisher_id

    @property
    def node_urls(self) -> list[str]:
        """The node base URLs this client fails over between."""
        return self._here.client.node_urls

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close this process's HTTP session and stop its loop thread, both within call_timeout
        (idempotent). In a forked child it closes only what the child built: the parent's session and
        loop are the parent's."""
        with self._lock():
            if self._closed:
                return
            self._closed = True
            here = self._here
        if here.pid != os.getpid():
            return
        here.loop.close(here.client.close(), self.call_timeout, "close")

    # The request methods, as blocking calls (the docstrings are Client's)
    declare = _Blocking(Client.declare)
    delete_queue = _Blocking(Client.delete_queue)
    purge = _Blocking(Client.purge)
    start_redrive = _Blocking(Client.start_redrive)
    redrives = _Blocking(Client.redrives)
    cancel_redrive = _Blocking(Client.cancel_redrive)
    queue = _Blocking(Client.queue)
    queues = _Blocking(Client.queues)
    publish = _Blocking(Client.publish)
    declare_exchange = _Blocking(Client.declare_exchange)
    delete_exchange = _Blocking(Client.delete_exchange)
    exchanges = _Blocking(Client.exchanges)
    exchange = _Blocking(Client.exchange)
    bind = _Blocking(Client.bind)
    bind_exchange = _Blocking(Client.bind_exchange)
    unbind = _Blocking(Client.unbind)
    unbind_exchange = _Blocking(Client.unbind_exchange)
    bindings = _Blocking(Client.bindings)
    publish_to_exchange = _Blocking(Client.publish_to_exchange)
    consume = _Blocking(Client.consume)
    consumers = _Blocking(Client.consumers)
    deliveries = _Blocking(Client.deliveries)
    ack = _Blocking(Client.ack)
    nack = _Blocking(Client.nack)
    touch = _Blocking(Client.touch)
    cancel = _Blocking(Client.cancel)
    get = _Blocking(Client.get)
    ack_got = _Blocking(Client.ack_got)
    nack_got = _Blocking(Client.nack_got)
    touch_got = _Blocking(Client.touch_got)
    consumer_log = _Blocking(Client.consumer_log)
    browse = _Blocking(Client.browse)
    peek = _Blocking(Client.peek)
    durable_checkout = _Blocking(Client.durable_checkout)
    durable_settle = _Blocking(Client.durable_settle)
    members = _Blocking(Client.members)
    add_member = _Blocking(Client.add_member)
    delete_member = _Blocking(Client.delete_member)
    transfer_leader = _Blocking(Client.transfer_leader)
    checkpoint = _Blocking(Client.checkpoint)
    forget_node = _Blocking(Client.forget_node)
    nodes = _Blocking(Client.nodes)
    health = _Blocking(Client.health)
    metrics_text = _Blocking(Client.metrics_text)
    whoami = _Blocking(Client.whoami)
    users = _Blocking(Client.users)
    put_user = _Blocking(Client.put_user)
    delete_user = _Blocking(Client.delete_user)
    set_permissions = _Blocking(Client.set_permissions)
    vhosts = _Blocking(Client.vhosts)
    declare_vhost = _Blocking(Client.declare_vhost)
    delete_vhost = _Blocking(Client.delete_vhost)
    policies = _Blocking(Client.policies)
    set_policy = _Blocking(Client.set_policy)
    clear_policy = _Blocking(Client.clear_policy)
    create_token = _Blocking(Client.create_token)

    def publish_all(
        self,
        queue: str,
        messages: Iterable[Publishable],
        *,
        window: int = 64,
        batch: int = 100,
        sent: Callable[[int], None] | None = None,
        wait_ms: int = 0,
    ) -> list[int]:
        """Publish many messages through a pipelined publisher; returns their ids in order. Each batch of
        sends and the final flush is a call of its own within call_timeout, the whole is unbounded.
        `sent(n)` is told of each batch handed to the publisher (a progress display); `wait_ms` as for
        `Client.publish`."""
        iterator = iter(messages)
        with self.publisher(queue, window=window, batch=batch, wait_ms=wait_ms) as pub:
            confirms = []
            while chunk := list(itertools.islice(iterator, batch)):
                confirms += pub.send_all(chunk)
                if sent is not None:
                    sent(len(chunk))
        return [confirm.result() for confirm in confirms]

    def publisher(self, queue: str, *, window: int = 64, batch: int = 100, wait_ms: int = 0) -> SyncPublisher:
        """A pipelined publisher: `with client.publisher(q) as pub: confirm = pub.send(m)`; leaving the
        block flushes it (quorumq.sync_publisher); `wait_ms` as for `Client.publish`."""
        here = self._in_this_process()
        publisher = here.client.publisher(queue, window=window, batch=batch, wait_ms=wait_ms)
        return SyncPublisher(publisher, functools.partial(self._call, here))

    def _call(self, here: _InProcess, coroutine: Coroutine[Any, Any, T], name: str) -> T:
        """Run `coroutine` on `here`'s loop within call_timeout; `name` names the call if it times out."""
        return here.loop.run(coroutine, self.call_timeout, name)

    def _start(self) -> _InProcess:
        loop = LoopThread(name="quorumq-client")
        try:
            return _InProcess(os.getpid(), loop, self._new_client())
        except BaseException:
            loop.stop(self.call_timeout)
            raise

    def _lock(self) -> threading.Lock:
        return self._locks.setdefault(os.getpid(), threading.Lock())

    def _in_this_process(self) -> _InProcess:
        """The loop and client of this process, built on first use after a fork."""
        here = self._here
        if here.pid == os.getpid() and not self._closed:
            return here
        with self._lock():
            if self._closed:
                raise RuntimeError("this SyncClient is closed")
            if self._here.pid != os.getpid():
                self._here = self._start()
            return self._here
