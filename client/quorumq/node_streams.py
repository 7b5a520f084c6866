"""NodeStreams: a client's streaming connections (quorumq.stream), one per node it talks to, each opened
on first use and again after it closed. A node that answers the upgrade 404 offers no stream: it is
remembered, and its requests go over the request/response API."""

import asyncio
from collections.abc import Callable

import aiohttp

from quorumq.auth import ClientCredentials
from quorumq.node_watch import NodeWatch
from quorumq.stream import StreamConnection, StreamUnavailable

NO_STREAM = 404


class NodeStreams:
    """The open stream of each node, for a client with `credentials` whose HTTP session is `session()`;
    `watch(base)` is the node's watch (quorumq.node_watch), shared by its successive streams."""

    def __init__(
        self,
        session: Callable[[], aiohttp.ClientSession],
        credentials: ClientCredentials,
        watch: Callable[[str], NodeWatch],
        vhost: str = "/",
    ) -> None:
        self._session = session
        self._vhost = vhost
        self._credentials = credentials
        self._watch = watch
        self._open: dict[str, StreamConnection] = {}
        self._opening: dict[str, asyncio.Future[StreamConnection]] = {}
        self._absent: set[str] = set()

    async def to(self, base: str, timeout: float) -> StreamConnection | None:
        """The stream to the node at `base`, opened within `timeout` when none is open; None when the
        node does not take one now (use the request/response API). ConnectFailed when the node
        cannot be reached."""
        if base in self._absent:
            return None
        connection = self._open.get(base)
        if connection is not None and not connection.closed:
            return connection
        opening = self._opening.get(base)
        if opening is None:  # concurrent callers share one attempt
            opening = self._opening[base] = asyncio.ensure_future(self._connect(base, timeout))
            opening.add_done_callback(lambda done: self._opened(base, done))
        try:
            return await asyncio.shield(opening)
        except StreamUnavailable:
            return None

    async def close(self) -> None:
        """Close every stream (the nodes cancel their consumers)."""
        for opening in self._opening.values():
            opening.cancel()
        connections, self._open = list(self._open.values()), {}
        await asyncio.gather(*(connection.close() for connection in connections), return_exceptions=True)

    async def _connect(self, base: str, timeout: float) -> StreamConnection:
        credentials = self._credentials
        return await StreamConnection.open(
            self._session(),
            base,
            headers=credentials.headers,
            tls=credentials.ssl,
            timeout=timeout,
            watch=self._watch(base),
            vhost=self._vhost,
        )

    def _opened(self, base: str, done: asyncio.Future[StreamConnection]) -> None:
        self._opening.pop(base, None)
        if done.cancelled():
            return
        failure = done.exception()
        if failure is None:
            self._open[base] = done.result()
        elif isinstance(failure, StreamUnavailable) and failure.status == NO_STREAM:
            self._absent.add(base)
