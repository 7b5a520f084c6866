"""Raw HTTP calls for the security tests: every status and header visible, no client retries."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable
from pathlib import Path
from typing import Any, NamedTuple

import aiohttp
import msgpack
from support.eventually import eventually

from api.access import Access
from api.app import ENDPOINTS
from api.endpoints import in_vhost
from cli.node_processes import HARNESS_HEADERS, HARNESS_SECRET, NodeProcess
from cluster.replication.transport import FRAME_HEADER, Handshake
from cluster.security.peer_auth import sign_assertion
from quorumq.auth import basic_header

ADMIN = HARNESS_HEADERS["Authorization"]
NO_GUEST = {"QUORUMQ_LOOPBACK_GUEST": "false"}
MAX_LAG_S = 1.0
"""How long a node's event loop may be seen blocked while it serves hostile input (generous: the machine
running the tests is shared; an unbounded decode of a few MiB blocks for seconds)."""
PROBE_INTERVAL_S = 0.02
PATH_VALUES = {
    "{q}": "sec-q",
    "{tag}": "t1",
    "{node}": "node1",
    "{user}": "someone",
    "{policy}": "some-policy",
    "{task}": "t1",
    "{vhost}": "%2F",
    "{exchange}": "alice-x",  # one alice may use: the route's rule on `q` decides
    "{destination}": "alice-y",
    "{props}": "~",
}


def wall_ms() -> int:
    """The wall clock now, in ms since the epoch: the time the test process dates and checks node
    assertions by (see test_harness_clock)."""
    return time.time_ns() // 1_000_000


def harness_assertion(
    user: str, method: str, target: str, digest: str, *, to: str, secret: str = HARNESS_SECRET
) -> str:
    """A node assertion made by the test process, dated by the wall clock now. Its steady clock follows a
    step of the wall clock only minutes after it (`cluster/steady_clock.py`); a node started since dates
    its start by the wall clock as it was then."""
    return sign_assertion(secret, user, method, target, digest, wall_ms(), to=to)


class Answer(NamedTuple):
    """One HTTP answer."""

    status: int
    body: Any
    headers: dict[str, str]


async def call(
    method: str,
    url: str,
    *,
    authorization: str | None = None,
    json: Any = None,
    data: bytes | AsyncIterable[bytes] | None = None,
    headers: dict[str, str] | None = None,
    source: str | None = None,
) -> Answer:
    """Send one request with an optional Authorization header (from the local address `source`, e.g.
    another loopback address) and return status, parsed body, headers."""
    headers = {**(headers or {}), **({"Authorization": authorization} if authorization else {})}
    timeout = aiohttp.ClientTimeout(total=20)
    connector = aiohttp.TCPConnector(local_addr=(source, 0) if source else None)
    async with (
        aiohttp.ClientSession(timeout=timeout, connector=connector) as session,
        session.request(method, url, headers=headers, json=json, data=data) as response,
    ):
        text = await response.text()
        body: Any = text
        if response.content_type == "application/json" and text:
            body = await response.json()
        return Answer(response.status, body, dict(response.headers))


async def eventually_status(url: str, authorization: str, status: int) -> None:
    """Followers apply a metadata change a moment after the leader: poll until it shows."""

    async def answered() -> bool:
        return (await call("GET", url, authorization=authorization)).status == status

    await eventually(answered, f"{url} to answer {status}", timeout=10, interval=0.05)


async def eventually_body(url: str, holds: Callable[[Any], bool]) -> None:
    """Poll `GET url` as the administrator until its answer's body `holds`."""

    async def held() -> bool:
        body = (await call("GET", url, authorization=ADMIN)).body
        assert holds(body), body
        return True

    await eventually(held, f"{url} to answer as wanted", timeout=10, interval=0.05)


async def add_user(urls: list[str], name: str, password: str, permissions: dict[str, str]) -> None:
    """Create a user with `permissions` and wait until every node accepts its password."""
    created = await call(
        "PUT", f"{urls[0]}/api/users/{name}", authorization=ADMIN, json={"password": password}
    )
    assert created.status == 201, created.body
    granted = await call(
        "PUT", f"{urls[0]}/api/users/{name}/permissions", authorization=ADMIN, json=permissions
    )
    assert granted.status == 204, granted.body
    for url in urls:
        await eventually_status(url + "/api/whoami", basic_header(name, password), 200)


def concrete(path: str, **values: str) -> str:
    """A route template with its placeholders filled in."""
    for placeholder, default in PATH_VALUES.items():
        path = path.replace(placeholder, values.get(placeholder[1:-1], default))
    return path


def protected_routes() -> list[tuple[str, str, Access]]:
    """Every route that needs credentials (all but the public ones), a queue's at its one-segment path
    and at RabbitMQ's `/api/queues/{vhost}/{q}...` (`{vhost}` is `%2F`)."""
    declared = [(e.method, e.path, e.access) for e in ENDPOINTS if e.access is not Access.PUBLIC]
    aliased = [(method, alias, access) for method, path, access in declared if (alias := in_vhost(path))]
    return sorted([*declared, *aliased], key=lambda route: route[:2])


def non_loopback_address() -> str | None:
    """An address of this machine that is not loopback (the source of its default route), if any."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))
        address = probe.getsockname()[0]
    except OSError:
        return None
    finally:
        probe.close()
    return None if address.startswith("127.") else address


async def raft_handshake(host: str, port: int, name: str, secret: str, to: str) -> bool:
    """Dial a node's Raft port as `name`, meaning to dial node `to`, proving `secret`; True when the node
    welcomes us."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        (length,) = FRAME_HEADER.unpack(await reader.readexactly(FRAME_HEADER.size))
        _, _, server_nonce = msgpack.unpackb(await reader.readexactly(length))
        writer.write(Handshake(name, to, server_nonce, b"n" * 16, "").hello(secret.encode()))
        await writer.drain()
        header = await asyncio.wait_for(reader.read(FRAME_HEADER.size), 10)
        return len(header) == FRAME_HEADER.size
    finally:
        writer.close()


def peak_rss(node: NodeProcess) -> int:
    """The node process's peak resident memory (VmHWM), in bytes."""
    assert node.process is not None
    for line in Path(f"/proc/{node.process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc status")


@contextlib.asynccontextmanager
async def loop_lag(url: str) -> AsyncIterator[list[float]]:
    """While the block runs, `GET /api/health` (answered on the node's event loop, with no I/O of its
    own) asked again and again; the list holds the longest answer time seen (seconds), filled in when
    the block ends: how long the loop was blocked, as other clients see it."""
    worst: list[float] = []
    done = asyncio.Event()

    async def probe() -> None:
        loop, longest = asyncio.get_running_loop(), 0.0
        async with aiohttp.ClientSession() as session:
            while not done.is_set():
                started = loop.time()
                async with session.get(url + "/api/health") as response:
                    await response.read()
                longest = max(longest, loop.time() - started)
                await asyncio.sleep(PROBE_INTERVAL_S)  # pacing, not waiting for anything
        worst.append(longest)

    prober = asyncio.create_task(probe())
    try:
        yield worst
    finally:
        done.set()
        await prober


async def stream_reply(url: str, authorization: str, frame: bytes, *, hello: bool) -> aiohttp.WSMessage:
    """Send `frame` on a new stream as `authorization` (after a hello when `hello`): the node's first
    message after it (a frame, or the connection's close)."""
    async with (
        aiohttp.ClientSession(headers={"Authorization": authorization}) as session,
        session.ws_connect(url + "/api/stream", max_msg_size=0) as ws,
    ):
        if hello:
            await ws.send_bytes(msgpack.packb({"op": "hello", "versions": [1]}))
            assert msgpack.unpackb((await ws.receive(30)).data)["op"] == "hello"
        await ws.send_bytes(frame)
        return await ws.receive(60)
