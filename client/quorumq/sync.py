"""SyncClient: the Client's methods as blocking calls, for plain code (CLI, Spark executors, WSGI)."""

import functools
import itertools
import os
import ssl
import threading
from collections.abc import Callable, Coroutine, Iterable, Sequence
from types import TracebackType
from typing import Any, NamedTuple, Self, TypeVar

from quorumq.auth import Auth
from quorumq.client import Client, Wire
from quorumq.loop import LoopThread
from quorumq.messages import Publishable
from quorumq.sync_publisher import SyncPublisher
from quorumq.transport import DEFAULT_UNRESPONSIVE_AFTER

T = TypeVar("T")
CALL_TIMEOUT_ALLOWANCE = 80.0
"""How much longer than one request's `timeout` a call may take by default: room for the longest long-poll
wait a node accepts (60 s) and for retries."""

_BLOCKING_METHODS = (
    "declare",
    "delete_queue",
    "purge",
    "queue",
    "queues",
    "publish",
    "consume",
    "deliveries",
    "ack",
    "nack",
    "cancel",
    "get",
    "ack_got",
    "nack_got",
    "consumer_log",
    "browse",
    "durable_checkout",
    "durable_settle",
    "members",
    "add_member",
    "delete_member",
    "transfer_leader",
    "forget_node",
    "nodes",
    "health",
    "metrics_text",
    "whoami",
    "users",
    "put_user",
    "delete_user",
    "set_permissions",
    "create_token",
)


class _InProcess(NamedTuple):
    """What a SyncClient runs on in one process: its loop thread and its async client."""

    pid: int
    loop: LoopThread
    client: Client


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

    def publish_all(
        self, queue: str, messages: Iterable[Publishable], *, window: int = 64, batch: int = 100
    ) -> list[int]:
        """Publish many messages through a pipelined publisher; returns their ids in order. Each batch of
        sends and the final flush is a call of its own within call_timeout, the whole is unbounded."""
        iterator = iter(messages)
        with self.publisher(queue, window=window, batch=batch) as pub:
            confirms = []
            while chunk := list(itertools.islice(iterator, batch)):
                confirms += pub.send_all(chunk)
        return [confirm.result() for confirm in confirms]

    def publisher(self, queue: str, *, window: int = 64, batch: int = 100) -> SyncPublisher:
        """A pipelined publisher: `with client.publisher(q) as pub: confirm = pub.send(m)`; leaving the
        block flushes it (quorumq.sync_publisher)."""
        here = self._in_this_process()
        publisher = here.client.publisher(queue, window=window, batch=batch)
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


def _blocking(name: str) -> Callable[..., Any]:
    method = getattr(Client, name)

    @functools.wraps(method)
    def call(self: SyncClient, *args: Any, **kwargs: Any) -> Any:
        here = self._in_this_process()
        return self._call(here, getattr(here.client, name)(*args, **kwargs), name)

    return call


for _name in _BLOCKING_METHODS:
    setattr(SyncClient, _name, _blocking(_name))
