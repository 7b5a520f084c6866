"""Node assertions (`X-Quorumq-Node-Auth`) are bound to the request they were made for (method, path,
query string, body) and to the node they are made for (named by the metadata, or by that node's health
answer), are accepted once, and the old unbound format is refused; forwarding between real nodes keeps
working with them, also once a node's wall clock jumps."""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import hmac
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from aiohttp import web
from security_helpers import ADMIN, NO_GUEST, add_user, call, harness_assertion, wall_ms
from support.eventually import eventually

from api.forwarding import HOPS_HEADER
from cli.node_processes import (
    HARNESS_SECRET,
    NodeProcess,
    ProcessCluster,
    free_ports,
    plan_cluster,
    wait_healthy,
)
from cluster.security.peer_auth import (
    NODE_AUTH_HEADER,
    body_digest,
    derived_key,
    verify_assertion,
)
from jepsen_tests.fake_clocks import INSTALL_HINT, FakeClocks, libfaketime

HOUR_S = 3600


def _assertion(user: str, method: str, target: str, body: bytes = b"", to: str = "node1") -> dict[str, str]:
    """The header a node sends to make `method target` with `body` as `user` on node `to`."""
    headers = {NODE_AUTH_HEADER: harness_assertion(user, method, target, body_digest(body), to=to)}
    return {**headers, "Content-Type": "application/json"} if body else headers


async def _declared(base: str, name: str) -> str:
    url = f"{base}/api/queues/{name}"
    assert (await call("PUT", url, authorization=ADMIN)).status in (201, 204)
    return url


async def test_a_replayed_assertion_is_401(secured: ProcessCluster) -> None:
    base = secured.urls[0]
    url = await _declared(base, "na-replay")
    header = _assertion("@node", "GET", "/api/queues/na-replay")
    assert (await call("GET", url, headers=header)).status == 200
    assert (await call("GET", url, headers=header)).status == 401
    assert (await call("GET", secured.urls[0] + "/api/queues/na-replay", headers=header)).status == 401


async def test_an_assertion_for_one_request_does_not_authorise_another(secured: ProcessCluster) -> None:
    base = secured.urls[0]
    url = await _declared(base, "na-bound")
    get = "/api/queues/na-bound"
    assert (await call("DELETE", url, headers=_assertion("@node", "GET", get))).status == 401
    assert (await call("GET", url, authorization=ADMIN)).status == 200  # still there
    assert (await call("GET", url + "?x=1", headers=_assertion("@node", "GET", get))).status == 401
    assert (await call("GET", url + "?x=1", headers=_assertion("@node", "GET", get + "?x=2"))).status == 401
    assert (await call("GET", url + "?x=1", headers=_assertion("@node", "GET", get + "?x=1"))).status == 200
    publish = get + "/messages"
    meant, sent = b'{"messages": [{"body": "meant"}]}', b'{"messages": [{"body": "forged"}]}'
    changed = await call(
        "POST", base + publish, data=sent, headers=_assertion("@node", "POST", publish, meant)
    )
    assert changed.status == 401
    genuine = await call(
        "POST", base + publish, data=meant, headers=_assertion("@node", "POST", publish, meant)
    )
    assert genuine.status == 201, genuine.body
    got = await call("POST", url + "/get", authorization=ADMIN, json={"count": 10, "ack": "auto"})
    assert [m["body"] for m in got.body] == ["meant"]


def _old_format(user: str, method: str, path: str) -> str:
    """An assertion as nodes made them before they were bound to the query, the body and a nonce."""
    expires = wall_ms() + 60_000
    message = "\x00".join((user, str(expires), method, path)).encode()
    mac = hmac.new(derived_key(HARNESS_SECRET, "node-auth"), message, hashlib.sha256).hexdigest()
    return f"{user};{expires};{mac}"


async def test_the_old_assertion_format_is_refused(secured: ProcessCluster) -> None:
    old = _old_format("@node", "GET", "/api/users")
    answer = await call("GET", secured.urls[0] + "/api/users", headers={NODE_AUTH_HEADER: old})
    assert answer.status == 401, answer.body


async def test_requests_forwarded_between_nodes_still_work(secured: ProcessCluster) -> None:
    first = secured.urls[0]
    url = await _declared(first, "na-forwarded")
    leader = (await call("GET", url, authorization=ADMIN)).body["leader"]
    others = [n.url for n in secured.nodes if n.name != leader]
    large = "x" * (3 << 20)  # hashed off the event loop on both sides
    for base in others:  # every request below is forwarded to the queue's leader
        q = f"{base}/api/queues/na-forwarded"
        assert (await call("GET", q, authorization=ADMIN)).body["leader"] == leader
        published = await call(
            "POST", q + "/messages", authorization=ADMIN, json={"messages": [{"body": "a"}, {"body": large}]}
        )
        assert published.status == 201, published.body
        got = await call("POST", q + "/get", authorization=ADMIN, json={"count": 2})
        assert [m["body"] for m in got.body] == ["a", large]
        acked = await call("POST", q + "/ack", authorization=ADMIN, json={"ids": [m["id"] for m in got.body]})
        assert acked.body == {"ok": True}
        consumer = await call("POST", q + "/consumers", authorization=ADMIN, json={"prefetch": 5})
        tag = consumer.body["consumer"]
        await call("POST", q + "/messages", authorization=ADMIN, json={"messages": [{"body": "c"}]})
        polled = await call("GET", f"{q}/consumers/{tag}/deliveries?max=5&wait=5", authorization=ADMIN)
        assert [m["body"] for m in polled.body] == ["c"], polled.body
        acked = await call(
            "POST", f"{q}/consumers/{tag}/ack", authorization=ADMIN, json={"ids": [polled.body[0]["id"]]}
        )
        assert acked.status == 200, acked.body
        assert (await call("DELETE", f"{q}/consumers/{tag}", authorization=ADMIN)).status == 204
        members = await call("GET", q + "/members", authorization=ADMIN)
        assert {m["raft_state"] for m in members.body["members"]} <= {"leader", "follower"}, members.body
        listed = await call("GET", base + "/api/queues", authorization=ADMIN)
        assert "na-forwarded" in [row["name"] for row in listed.body]
    guarded = await call("DELETE", f"{others[0]}/api/queues/na-forwarded?if_empty=true", authorization=ADMIN)
    assert guarded.status == 204, guarded.body


async def test_a_forged_assertion_is_refused_before_the_body_is_read(secured: ProcessCluster) -> None:
    """Only a genuine assertion makes a node read (and hash) a body: a forged one with a large body
    announced and never sent is 401 at once, not after the body's read timeout."""
    node = urlsplit(secured.urls[0])
    forged = harness_assertion(
        "@node", "POST", "/api/queues/na-big/messages", "0" * 64, to="node1", secret="not-the-secret"
    )
    reader, writer = await asyncio.open_connection(node.hostname, node.port)
    try:
        writer.write(
            b"POST /api/queues/na-big/messages HTTP/1.1\r\nHost: localhost\r\n"
            + b"Content-Type: application/json\r\n"
            + f"{NODE_AUTH_HEADER}: {forged}\r\nContent-Length: 50000000\r\n\r\n".encode()
        )
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), 15)  # the read timeout is 30 s
        assert status.split()[1] == b"401", status
    finally:
        writer.close()


async def test_an_assertion_made_before_a_node_restarted_is_not_accepted_again(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cluster = ProcessCluster.start(tmp_path, 3, env=NO_GUEST)
    try:
        node = cluster.nodes[0]
        captured = _assertion("@node", "GET", "/api/whoami")
        assert (await call("GET", node.url + "/api/whoami", headers=captured)).status == 200
        node.stop()
        node.start()
        wait_healthy([node])
        replayed = await call("GET", node.url + "/api/whoami", headers=captured)
        assert replayed.status == 503, replayed.body  # not accepted; retryable for a request in flight
        fresh = await call("GET", node.url + "/api/whoami", headers=_assertion("@node", "GET", "/api/whoami"))
        assert fresh.status == 200, fresh.body
        forwarded = await call(
            "GET", f"{cluster.urls[1]}/api/queues/any-q/members/{node.name}", authorization=ADMIN
        )
        assert forwarded.status in (200, 404), forwarded.body  # other nodes still reach it
    finally:
        cluster.stop()


async def test_w10_an_assertion_is_refused_by_every_node_but_its_destination(secured: ProcessCluster) -> None:
    """One captured on its way to node1 is worth nothing on node2 or node3 (and once on node1)."""
    first, *others = secured.nodes
    captured = _assertion("@node", "GET", "/api/whoami", to=first.name)
    for node in others:
        replayed = await call("GET", node.url + "/api/whoami", headers=captured)
        assert replayed.status == 401, (node.name, replayed.body)
    assert (await call("GET", first.url + "/api/whoami", headers=captured)).status == 200


async def _follower(secured: ProcessCluster, queue: str) -> tuple[str, str]:
    """A node that does not lead `queue` (its requests are forwarded), and the queue's URL there."""
    await _declared(secured.urls[0], queue)
    leader = (await call("GET", f"{secured.urls[0]}/api/queues/{queue}", authorization=ADMIN)).body["leader"]
    return next((n.name, f"{n.url}/api/queues/{queue}") for n in secured.nodes if n.name != leader)


async def test_w13_a_clients_hops_header_is_ignored(secured: ProcessCluster) -> None:
    _, url = await _follower(secured, "na-hops")
    for hops in ("abc", "2", "-7", "99999999999999999999"):  # garbage, used up, extending, huge
        answer = await call("GET", url, authorization=ADMIN, headers={HOPS_HEADER: hops})
        assert answer.status == 200, (hops, answer.status, answer.body)


async def test_w13_a_node_asserted_hops_header_must_be_a_hop_count(secured: ProcessCluster) -> None:
    node, url = await _follower(secured, "na-hops-asserted")
    target = "/api/queues/na-hops-asserted"
    for hops in ("abc", "-1", "3", "", "9" * 5000):
        headers = {**_assertion("@node", "GET", target, to=node), HOPS_HEADER: hops}
        answer = await call("GET", url, headers=headers)
        assert answer.status == 400, (hops, answer.status, answer.body)
    forwarded = await call(
        "GET", url, headers={**_assertion("@node", "GET", target, to=node), HOPS_HEADER: "1"}
    )
    assert forwarded.status == 200, forwarded.body


async def test_a_forwarded_request_is_rechecked_as_its_user_on_the_node_that_serves_it(
    secured: ProcessCluster,
) -> None:
    """What a node forwards for a user carries an assertion naming that user: the node given it grants
    only that user's rights, whoever signed it."""
    await add_user(secured.urls, "fw-reader", "fw-pw", {"configure": "", "write": "", "read": "fw-.*"})
    await _declared(secured.urls[0], "fw-kept")
    for url, node in zip(secured.urls, secured.nodes, strict=True):
        queue = "/api/queues/fw-kept"
        allowed = await call("GET", url + queue, headers=_assertion("fw-reader", "GET", queue, to=node.name))
        assert allowed.status == 200, (node.name, allowed.body)
        delete = _assertion("fw-reader", "DELETE", queue, to=node.name)
        refused = await call("DELETE", url + queue, headers=delete)
        assert refused.status == 403 and refused.body["error"] == "forbidden", (node.name, refused.body)
        publish, body = queue + "/messages", b'{"messages": [{"body": "m"}]}'
        write = _assertion("fw-reader", "POST", publish, body, to=node.name)
        refused = await call("POST", url + publish, data=body, headers=write)
        assert refused.status == 403 and refused.body["error"] == "forbidden", (node.name, refused.body)
    kept = await call("GET", secured.urls[0] + "/api/queues/fw-kept", authorization=ADMIN)
    assert kept.status == 200 and kept.body["messages"] == 0, kept.body


async def _wall_clock_offset_s(url: str) -> float:
    """How far the node's wall clock (its `Date` header) is from this process's, in seconds."""
    answer = await call("GET", url + "/api/health")
    return email.utils.parsedate_to_datetime(answer.headers["Date"]).timestamp() - time.time()


async def _everything_still_works(cluster: ProcessCluster, queue: str) -> None:
    """Every node forwards a request to every other one (each carrying an assertion its signer dated and
    its destination checks), and a token minted on any node is accepted by every node."""
    for node in cluster.nodes:
        for other in cluster.nodes:
            if other is not node:
                url = f"{node.url}/api/queues/{queue}/members/{other.name}"  # answered by `other`
                forwarded = await call("GET", url, authorization=ADMIN)
                assert forwarded.status == 200, (node.name, other.name, forwarded.body)
        minted = await call("POST", node.url + "/api/tokens", authorization=ADMIN, json={"ttl_s": 600})
        assert minted.status == 201, minted.body
        for other in cluster.nodes:
            whoami = await call(
                "GET", other.url + "/api/whoami", authorization=f"Bearer {minted.body['token']}"
            )
            assert whoami.status == 200, (node.name, other.name, whoami.body)


@pytest.mark.skipif(libfaketime() is None, reason=f"libfaketime is not installed ({INSTALL_HINT})")
async def test_rule_a_wall_clock_that_jumps_after_the_start_breaks_no_assertion_and_no_token(
    tmp_path: Path,
) -> None:
    """Assertions and tokens carry expiry times by the steady clock (the wall clock at start plus the
    monotonic time since, following only a step that held minutes), so a node whose wall clock jumps an
    hour ahead, then an hour behind, still
    signs what the others accept and accepts what they sign. By its wall clock instead, each jump puts its
    assertions and tokens an hour out of the others' window (and theirs out of its own)."""
    nodes = plan_cluster(3, tmp_path / "data")
    clocks = FakeClocks(tmp_path / "clocks", [node.name for node in nodes])
    for node in nodes:
        node.env = clocks.env(node.name)
        node.start()
    cluster = ProcessCluster(nodes)
    try:
        await asyncio.to_thread(wait_healthy, nodes)
        queue = nodes[0].url + "/api/queues/jumping-clock"
        declared = await call(
            "PUT", queue, authorization=ADMIN, json={"arguments": {"x-quorum-initial-group-size": 3}}
        )
        assert declared.status == 201, declared.body
        await _everything_still_works(cluster, "jumping-clock")
        jumped = nodes[0]
        for offset in (HOUR_S, -HOUR_S):
            clocks.shift(jumped.name, offset)

            async def shifted(offset: int = offset) -> bool:
                return abs(await _wall_clock_offset_s(jumped.url) - offset) < 60

            await eventually(shifted, f"{jumped.name}'s wall clock to read {offset:+d} s", timeout=20)
            await _everything_still_works(cluster, "jumping-clock")
    finally:
        cluster.stop()


async def test_rule_a_node_that_knows_only_an_address_asserts_for_the_name_its_health_gives(
    tmp_path: Path,
) -> None:
    """A joining node knows its seed only by URL: it asks that URL's public `GET /api/health` for the
    node's name and makes its `POST /api/nodes` assertion for that name, and for no other node. Played by
    a server of this test at the seed's address, which names one node, then another."""
    names = ["seed-node", "renamed-node"]
    named: list[str] = []
    joins: list[tuple[str, str, bytes]] = []  # the name last given, the assertion, the body

    async def health(_: web.Request) -> web.Response:
        named.append(names[min(len(named), len(names) - 1)])
        return web.json_response({"status": "ok", "node": named[-1]})

    async def join(request: web.Request) -> web.Response:
        joins.append((named[-1], request.headers.get(NODE_AUTH_HEADER, ""), await request.read()))
        return web.json_response({"error": "not_ready"}, status=503)  # the node asks again

    app = web.Application()
    app.router.add_get("/api/health", health)
    app.router.add_post("/api/nodes", join)
    runner = web.AppRunner(app)
    await runner.setup()
    (port,) = free_ports(1)
    await web.TCPSite(runner, "127.0.0.1", port).start()
    http_port, raft_port = free_ports(2)
    joiner = NodeProcess(
        "joiner", "127.0.0.1", http_port, raft_port, tmp_path / "joiner", tmp_path / "joiner.log",
        extra_args=["--join", f"http://127.0.0.1:{port}"],
    )  # fmt: skip
    joiner.start()
    try:
        await eventually(lambda: len(joins) >= 2, "two join requests", timeout=60, interval=0.05)
    finally:
        joiner.stop()
        await runner.cleanup()
    assert [name for name, _, _ in joins[:2]] == ["seed-node", "renamed-node"], joins
    for name, assertion, body in joins:
        meant = verify_assertion(HARNESS_SECRET, assertion, "POST", "/api/nodes", wall_ms(), node=name)
        assert meant is not None and meant.user == "@node" and meant.body_sha256 == body_digest(body), name
        for other in {"seed-node", "renamed-node", "node1"} - {name}:
            assert verify_assertion(HARNESS_SECRET, assertion, "POST", "/api/nodes", node=other) is None
