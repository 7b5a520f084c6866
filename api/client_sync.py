"""SyncClient: the QuorumqClient's methods as blocking calls, for plain code (CLI, Spark executors)."""

import asyncio
import functools
import ssl
import threading
from collections.abc import Callable, Coroutine, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

from api.client_async import QuorumqClient, Wire
from api.client_auth import Auth
from api.client_transport import DEFAULT_UNRESPONSIVE_AFTER

T = TypeVar("T")

_BLOCKING_METHODS = (
    "declare",
    "delete_queue",
    "purge",
    "queue",
    "queues",
    "publish",
    "publish_all",
    "consume",
    "deliveries",
    "ack",
    "nack",
    "cancel",
    "get",
    "ack_got",
    "nack_got",
    "consumer_log",
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


class SyncClient:
    """A blocking QuorumqClient: every call runs on one private event loop in a daemon thread.

    It has the same request methods as QuorumqClient (same arguments, same errors) and is safe to share
    between threads. Use as a context manager or call `close()`.
    """

    def __init__(
        self,
        nodes: Sequence[str],
        *,
        timeout: float = 10.0,
        connect_timeout: float = 2.0,
        unresponsive_after: float = DEFAULT_UNRESPONSIVE_AFTER,
        auth: Auth | None = None,
        token: str | None = None,
        tls: ssl.SSLContext | bool | None = None,
        wire: Wire = "msgpack",
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="quorumq-client", daemon=True)
        self._thread.start()
        self._client = QuorumqClient(
            nodes,
            timeout=timeout,
            connect_timeout=connect_timeout,
            unresponsive_after=unresponsive_after,
            auth=auth,
            token=token,
            tls=tls,
            wire=wire,
        )

    @property
    def publisher_id(self) -> str:
        """The publisher id sent with every publish of this client."""
        return self._client.publisher_id

    @property
    def node_urls(self) -> list[str]:
        """The node base URLs this client fails over between."""
        return self._client.node_urls

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the HTTP session and stop the loop thread (idempotent)."""
        if self._loop.is_closed():
            return
        self._run(self._client.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        if self._loop.is_closed():
            coroutine.close()
            raise RuntimeError("this SyncClient is closed")
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise


def _blocking(name: str) -> Callable[..., Any]:
    method = getattr(QuorumqClient, name)

    @functools.wraps(method)
    def call(self: SyncClient, *args: Any, **kwargs: Any) -> Any:
        return self._run(getattr(self._client, name)(*args, **kwargs))

    return call


for _name in _BLOCKING_METHODS:
    setattr(SyncClient, _name, _blocking(_name))
