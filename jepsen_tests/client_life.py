"""A workload client that a nemesis can crash mid-request, as if its process had been killed.

A client runs as successive lives, each with its own HTTP session and quorumq.Client (so its own
publisher id, consumer tags and connections). `crash()` arms the running life: as soon as a request's
bytes go on the wire (its body, or its headers when it has none) the life is cancelled one event-loop
turn later, before the answer can be read; its session then closes every connection it had open.
To the server this is what a killed client process looks like: the socket closes under a request it
may already be processing, and a consumer goes silent until its timeout hands its unacked deliveries
back. The client stays down until `revive()`, then starts a new life, like a restarted process. A
client on a streaming connection has HTTP requests only when it opens a stream (its frames are not
traced), so it is crashed there, right after the upgrade went out.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

import aiohttp
from yarl import URL

from cli.first_event import first_of
from quorumq import Client

CRASHED = "crashed"

Life = Callable[[Client], Awaitable[None]]


@dataclass(frozen=True)
class CrashedClient:
    """Which client was crashed, with which request on the wire, and how to restart it."""

    process: str
    request: str
    revive: Callable[[], None] = field(repr=False)

    @property
    def description(self) -> str:
        """One line for the nemesis log."""
        if not self.request:
            return f"{self.process}: no request went out in time, not crashed"
        return f"killed {self.process} with {self.request} on the wire"


class ClientCrasher(Protocol):
    """What the `client` nemesis needs of the workload (called from the nemesis' thread)."""

    def crash_client(self, role: str, rng: random.Random) -> CrashedClient:
        """Crash one running client of `role` ("publisher" or "consumer", drawn with `rng`) mid-request."""
        ...


class CrashableClient:
    """Runs `life` with a fresh client from `connect(session)` until stopped; can be crashed mid-request."""

    def __init__(self, process: str, life: Life, connect: Callable[[aiohttp.ClientSession], Client]) -> None:
        self.process = process
        self._life = life
        self._connect = connect
        self._task: asyncio.Task[None] | None = None
        self._armed = False
        self._crashed_request = ""
        self._crashed = asyncio.Event()
        self._revived = asyncio.Event()

    async def run(self, stop: asyncio.Event) -> None:
        """Live until `stop`; after a crash stay down until revived (or stopped), then live again."""
        while not stop.is_set():
            task = self._task = asyncio.create_task(self._live())
            try:
                await asyncio.wait([task])
            finally:
                task.cancel()  # only does something when run() itself is cancelled
            if not task.cancelled():
                task.result()  # a life ends on its own only at `stop` (or with an error, raised here)
                continue
            self._crashed.set()
            await first_of(self._revived, stop)
            self._revived.clear()
            self._crashed.clear()

    async def crash(self, within: float) -> str:
        """Crash the running life with its next request on the wire; returns that request ("" when
        no request went out within `within` seconds, and then nothing was done)."""
        self._armed = True
        try:
            await asyncio.wait_for(self._crashed.wait(), within)
        except TimeoutError:
            self._armed = False
            return ""
        return self._crashed_request

    def revive(self) -> None:
        """Let a crashed client start a new life."""
        self._revived.set()

    async def _live(self) -> None:
        trace = aiohttp.TraceConfig()
        trace.on_request_headers_sent.append(self._on_headers_sent)
        trace.on_request_chunk_sent.append(self._on_chunk_sent)
        async with aiohttp.ClientSession(trace_configs=[trace]) as session:
            await self._life(self._connect(session))

    async def _on_headers_sent(
        self, session: aiohttp.ClientSession, context: object, params: aiohttp.TraceRequestHeadersSentParams
    ) -> None:
        bodiless = (
            params.headers.get("Content-Length", "0") == "0" and "Transfer-Encoding" not in params.headers
        )
        if bodiless:
            self._request_sent(params.method, params.url)

    async def _on_chunk_sent(
        self, session: aiohttp.ClientSession, context: object, params: aiohttp.TraceRequestChunkSentParams
    ) -> None:
        self._request_sent(params.method, params.url)

    def _request_sent(self, method: str, url: URL) -> None:
        """aiohttp writes a request's bytes right after these callbacks return, without yielding; the
        cancel runs one loop turn later, before any answer can be read."""
        if self._armed and self._task is not None:
            self._armed = False
            self._crashed_request = f"{method} {url.path}"
            asyncio.get_running_loop().call_soon(self._task.cancel)
