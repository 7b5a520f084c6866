"""Schemathesis against a running 3-node cluster, driven by the served OpenAPI document: no request
makes a node answer 5xx or die, and afterwards the cluster is healthy and still holds every message
it confirmed before the fuzzing.

Examples per operation: QUORUMQ_API_FUZZ_EXAMPLES (default 10 in CI; see docs/operate/security.md).
Cluster membership changes (join, forget) are left out: they would fuzz the cluster's shape, not input
handling. Publishes are also sent as msgpack (the extension). Authentication is on (no request is
anonymous): the first run logs in as the harness administrator (a stored user), the second as a user
with a few permissions, and checks besides that no answer is 2xx for a route or queue (or dead-letter
target) that user has no permission for, and that queue listings show it only its queues.

Then hypothesis sends hostile input (W5): stream frames and JSON bodies made of what costs the most per
byte to decode, and whatever a process without the secret may send to the Raft port; each is answered
while the node's event loop is never seen blocked for MAX_LAG_S, and the node's peak memory stays
bounded (examples: QUORUMQ_FUZZ_EXAMPLES, default 200).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import zlib
from collections import Counter
from collections.abc import Awaitable, Iterator
from typing import Any, TypeVar

import aiohttp
import msgpack
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from security_helpers import ADMIN, MAX_LAG_S, call, loop_lag, peak_rss, stream_reply

from api.access import Access
from api.app import ENDPOINTS
from api.endpoints import access_rule
from api.openapi import spec
from cli.node_processes import HARNESS_HEADERS, HARNESS_PASSWORD, HARNESS_USER, ProcessCluster
from cluster.replication.transport import FRAME_HEADER
from quorumq import Client

EXAMPLES = int(os.environ.get("QUORUMQ_API_FUZZ_EXAMPLES", "10"))
HOSTILE_EXAMPLES = int(os.environ.get("QUORUMQ_FUZZ_EXAMPLES", "200"))
CANARY = "fuzz-canary"
CANARY_MESSAGES = 50
LONG_POLL_CAP_S = "0.1"
LIMITED_USER, LIMITED_PASSWORD = "fuzz-limited", "fuzz-limited-password"
LIMITED_PERMISSIONS = {
    "configure": "fuzz-own-.*",
    "write": "fuzz-own-.*|fuzz-drop",
    "read": "fuzz-own-.*|fuzz-peek",
}
LIMITED_QUEUES = ["fuzz-own-1", "fuzz-drop", "fuzz-peek", CANARY]  # declared by the administrator
LIMITED_ANSWERS: Counter[str] = Counter()  # "2xx", "403", ... over the limited user's run
T = TypeVar("T")

schema = schemathesis.openapi.from_dict(spec(ENDPOINTS)).exclude(path_regex="^/api/nodes")


@schemathesis.serializer("application/msgpack")
def _msgpack(ctx, value):  # type: ignore[no-untyped-def]
    """Publishes in msgpack too."""
    return msgpack.packb(_fits_msgpack(value))


def _fits_msgpack(value: Any) -> Any:
    """`value` with integers msgpack cannot carry (beyond 64 bits, as JSON can) turned into text."""
    if isinstance(value, dict):
        return {key: _fits_msgpack(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_fits_msgpack(item) for item in value]
    if isinstance(value, int) and not -(2**63) <= value < 2**64:
        return str(value)
    return value


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    """A cluster holding a canary queue with confirmed messages."""
    cluster = ProcessCluster.start(tmp_path_factory.mktemp("fuzzed"), 3)
    asyncio.run(_fill_canary(cluster.urls))
    _add_limited_user(cluster.urls[0])
    yield cluster
    cluster.stop()


async def _fill_canary(urls: list[str]) -> None:
    async with Client(urls) as client:
        await client.declare(CANARY)
        for i in range(CANARY_MESSAGES):
            await client.publish(CANARY, [f"canary-{i}"])
        for name in LIMITED_QUEUES[:-1]:
            await client.declare(name)


def _add_limited_user(url: str) -> None:
    with requests.Session() as admin:
        admin.headers.update(HARNESS_HEADERS)
        user = f"{url}/api/users/{LIMITED_USER}"
        assert admin.put(user, json={"password": LIMITED_PASSWORD}, timeout=30).status_code == 201
        assert admin.put(user + "/permissions", json=LIMITED_PERMISSIONS, timeout=30).status_code == 204


@pytest.fixture(scope="module")
def http() -> Iterator[requests.Session]:
    with requests.Session() as session:
        session.auth = (HARNESS_USER, HARNESS_PASSWORD)
        yield session


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_generated_request_makes_a_node_fail(case, fuzzed: ProcessCluster, http: requests.Session) -> None:  # type: ignore[no-untyped-def]
    if case.query and "wait" in case.query:
        case.query["wait"] = LONG_POLL_CAP_S
    node = fuzzed.nodes[hash(case.path) % len(fuzzed.nodes)]
    response = case.call(base_url=node.url, session=http, timeout=30)
    case.validate_response(response, checks=[not_a_server_error])
    assert all(n.running for n in fuzzed.nodes)


@pytest.fixture(scope="module")
def limited_http() -> Iterator[requests.Session]:
    with requests.Session() as session:
        session.auth = (LIMITED_USER, LIMITED_PASSWORD)
        yield session


def _may(permission: str, queue: Any) -> bool:
    return isinstance(queue, str) and re.fullmatch(LIMITED_PERMISSIONS[permission], queue) is not None


def _permitted(case: Any, queue: Any) -> bool:
    """Whether the limited user may have a 2xx for this request (its own reading of the access rules)."""
    access = access_rule(case.method.upper(), case.operation.path)
    if access in (Access.ADMINISTRATOR, Access.CONFIGURE_ADMIN):
        return False
    if access is Access.ANY_QUEUE_PERMISSION:
        return any(_may(p, queue) for p in LIMITED_PERMISSIONS)
    if access in (Access.CONFIGURE, Access.WRITE, Access.READ):
        arguments = case.body.get("arguments") if isinstance(case.body, dict) else None
        target = arguments.get("x-dead-letter-queue") if isinstance(arguments, dict) else None
        return _may(access.value, queue) and (not isinstance(target, str) or _may("write", target))
    return True


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_a_limited_user_gets_no_more_than_its_permissions(  # type: ignore[no-untyped-def]
    case, fuzzed: ProcessCluster, limited_http: requests.Session
) -> None:
    if case.query and "wait" in case.query:
        case.query["wait"] = LONG_POLL_CAP_S
    queue = (case.path_parameters or {}).get("q")
    if queue is not None:  # mostly queues it has some (or no) permission on, sometimes the generated name
        choice = zlib.crc32(repr(queue).encode()) % (len(LIMITED_QUEUES) + 1)
        queue = case.path_parameters["q"] = LIMITED_QUEUES[choice] if choice < len(LIMITED_QUEUES) else queue
    node = fuzzed.nodes[hash(case.path) % len(fuzzed.nodes)]
    response = case.call(base_url=node.url, session=limited_http, timeout=30)
    case.validate_response(response, checks=[not_a_server_error])
    allowed = 200 <= response.status_code < 300
    LIMITED_ANSWERS["2xx" if allowed else str(response.status_code)] += 1
    if allowed:
        assert _permitted(case, queue), (case.method, case.formatted_path, case.body, response.status_code)
    if allowed and case.method.upper() == "GET" and case.operation.path in ("/api/queues", "/api/queues/%2F"):
        answer = response.json()  # a list, or with `page` a page object
        listed = [
            row["name"] for row in (answer["items"] if isinstance(answer, dict) else answer) if "name" in row
        ]
        assert all(any(_may(p, name) for p in LIMITED_PERMISSIONS) for name in listed), listed
    assert all(n.running for n in fuzzed.nodes)


def test_the_limited_user_run_was_allowed_some_and_refused_some() -> None:
    if not LIMITED_ANSWERS:
        pytest.skip("the limited user's run did not run in this session")
    assert LIMITED_ANSWERS["2xx"] and LIMITED_ANSWERS["403"], LIMITED_ANSWERS


# Hostile decoding (W5): structures that cost the most per byte to decode (many small containers, made
# cheaply by repeating one value), as stream frames before and after the hello and as JSON bodies.
tiny = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 300) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=4,
)
repeated = st.builds(lambda value, times: [value] * times, tiny, st.integers(0, 1 << 17))
hostile = st.recursive(
    tiny | repeated,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=3,
)
STREAM_OPS = ["hello", "publish", "consume", "ack", "nack", "touch", "cancel", "frobnicate"]
stream_frames = st.one_of(
    st.binary(max_size=64),
    hostile.map(msgpack.packb),
    st.fixed_dictionaries(
        {"op": st.sampled_from(STREAM_OPS) | hostile, "id": st.integers(0, 2**63) | hostile},
        optional={
            "queue": st.sampled_from(["fuzz-own-1", "fuzz-drop"]) | hostile,
            "messages": hostile,
            "ids": hostile,
        },
    ).map(msgpack.packb),
)
JSON_ROUTES = ["/api/tokens", "/api/queues/fuzz-own-1/get", "/api/queues/fuzz-own-1", "/api/users/someone"]
"""Routes other than a publish: a JSON publish body is decoded whole (docs/operate/security.md, "Limits")."""
json_bodies = st.one_of(st.binary(max_size=64), hostile.map(lambda value: json.dumps(value).encode()))
MAX_PEAK_GROWTH_BYTES = 256 * 1024 * 1024
PEAK_BEFORE: dict[str, int] = {}


@settings(max_examples=HOSTILE_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(frame=stream_frames, after_hello=st.booleans())
def test_w5_hostile_stream_frames_are_answered_without_stalling_the_node(
    fuzzed: ProcessCluster, frame: bytes, after_hello: bool
) -> None:
    node = fuzzed.nodes[0]
    PEAK_BEFORE.setdefault(node.name, peak_rss(node))
    asyncio.run(_served_quickly(node.url, _stream_answer(node.url, frame, after_hello)))


@settings(max_examples=HOSTILE_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=json_bodies, route=st.sampled_from(JSON_ROUTES), method=st.sampled_from(["POST", "PUT"]))
def test_w5_hostile_json_bodies_are_answered_without_stalling_the_node(
    fuzzed: ProcessCluster, body: bytes, route: str, method: str
) -> None:
    node = fuzzed.nodes[1]
    PEAK_BEFORE.setdefault(node.name, peak_rss(node))
    answered = _served_quickly(
        node.url,
        call(
            method,
            node.url + route,
            authorization=ADMIN,
            data=body,
            headers={"Content-Type": "application/json"},
        ),
    )
    assert asyncio.run(answered).status < 500


raft_speech = st.one_of(
    st.binary(max_size=256),  # anything at all
    st.integers(0, 2**32 - 1).map(FRAME_HEADER.pack),  # a length prefix that lies, and nothing after it
    st.tuples(st.integers(0, 2**32 - 1), st.binary(max_size=8192)).map(
        lambda frame: FRAME_HEADER.pack(frame[0]) + frame[1]
    ),
    hostile.map(lambda value: _raft_frame(msgpack.packb(["hello", value, value, value, value, value]))),
    hostile.map(lambda value: _raft_frame(msgpack.packb(value))),
)


@settings(max_examples=HOSTILE_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(speech=raft_speech)
def test_hostile_raft_port_input_is_refused_without_stalling_the_node(
    fuzzed: ProcessCluster, speech: bytes
) -> None:
    """Whatever a process without the secret sends to a node's Raft port (what the peer transport reads
    before a handshake: 4 KiB frames at most, the rest read past), the node refuses it while its event
    loop is never seen blocked for MAX_LAG_S, and its peak memory stays bounded (below)."""
    node = fuzzed.nodes[2]
    PEAK_BEFORE.setdefault(node.name, peak_rss(node))
    asyncio.run(_served_quickly(node.url, _raft_refused(node.raft_port, speech)))


def _raft_frame(payload: bytes) -> bytes:
    return FRAME_HEADER.pack(len(payload)) + payload


async def _raft_refused(port: int, speech: bytes) -> None:
    """Send `speech` to the Raft port after its challenge; the node never answers with a welcome: it
    closes the connection (or waits for the rest of a frame that never comes, until we stop)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        (length,) = FRAME_HEADER.unpack(await reader.readexactly(FRAME_HEADER.size))
        challenge = msgpack.unpackb(await reader.readexactly(length))
        assert challenge[0] == "challenge", challenge
        with contextlib.suppress(TimeoutError, ConnectionError):  # the node may close as we speak
            writer.write(speech)
            await writer.drain()
            answer = await asyncio.wait_for(reader.read(64 * 1024), 1.0)
            assert b"welcome" not in answer, answer
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def test_w5_hostile_input_left_the_nodes_memory_bounded(fuzzed: ProcessCluster) -> None:
    if not PEAK_BEFORE:
        pytest.skip("the hostile decoding runs did not run in this session")
    for node in fuzzed.nodes:
        if node.name in PEAK_BEFORE:
            grown = peak_rss(node) - PEAK_BEFORE[node.name]
            assert grown < MAX_PEAK_GROWTH_BYTES, f"{node.name}'s peak memory grew {grown / 2**20:.0f} MiB"


async def _served_quickly(url: str, attack: Awaitable[T]) -> T:
    """What `attack` gives; the node's event loop was not seen blocked beyond MAX_LAG_S meanwhile."""
    async with loop_lag(url) as worst:
        result = await attack
    assert worst[0] < MAX_LAG_S, f"the event loop lagged {worst[0]:.2f} s"
    return result


async def _stream_answer(url: str, frame: bytes, after_hello: bool) -> None:
    """Send `frame` on a new stream (after a hello when `after_hello`); the node answers with a frame or
    closes the connection, nothing else."""
    message = await stream_reply(url, ADMIN, frame, hello=after_hello)
    assert message.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.CLOSE), message
    if message.type is aiohttp.WSMsgType.BINARY:
        answer = msgpack.unpackb(message.data)
        assert isinstance(answer, dict) and answer.get("status", 200) < 500, answer


def test_after_fuzzing_the_cluster_is_healthy_and_kept_every_confirmed_message(
    fuzzed: ProcessCluster,
) -> None:
    asyncio.run(_check_canary(fuzzed))


async def _check_canary(cluster: ProcessCluster) -> None:
    assert all(node.healthy() for node in cluster.nodes)
    async with Client(cluster.urls) as client:
        got = await client.get(CANARY, count=CANARY_MESSAGES, ack="auto")
        assert sorted(d.body for d in got) == sorted(f"canary-{i}".encode() for i in range(CANARY_MESSAGES))
