"""What a browser can be made to send, over plain HTTP: a rebound `Host`, a foreign `Origin` or
`Sec-Fetch-Site: cross-site` on a request that acts, a body a form can send, the Basic challenge that
fills a browser's credential cache, and the headers that keep answers out of frames, sniffing and caches
(decision 0020); `allowed_hosts = *` gives up the `Host` check. tests/ui/test_browser_attacks.py plays
the same attacks from a real browser."""

from __future__ import annotations

import shutil
import ssl
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from security_helpers import ADMIN, call

from cli.dev_tls import make_certificates
from cli.node_processes import HARNESS_HEADERS, ProcessCluster
from quorumq.auth import basic_header

GUEST = basic_header("guest", "guest")
FOREIGN = "http://attacker.example"
AUTO_ACK_GET = b'{"count": 100, "ack": "auto"}'


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    """One node that also answers to `queues.example` (`allowed_hosts`), with the loopback guest."""
    running = ProcessCluster.start(
        tmp_path_factory.mktemp("browser"), 1, env={"QUORUMQ_ALLOWED_HOSTS": "queues.example"}
    )
    yield running
    running.stop()


async def _queue_with(url: str, queue: str, messages: int) -> None:
    assert (await call("PUT", f"{url}/api/queues/{queue}", authorization=ADMIN)).status == 201
    body = {"messages": [{"body": f"m{i}"} for i in range(messages)]}
    published = await call("POST", f"{url}/api/queues/{queue}/messages", authorization=ADMIN, json=body)
    assert published.status == 201, published.body


async def _ready(url: str, queue: str) -> int:
    answer = await call("GET", f"{url}/api/queues/{queue}", authorization=ADMIN)
    assert answer.status == 200, answer.body
    return int(answer.body["messages_ready"])


def _port(url: str) -> str:
    return url.rsplit(":", 1)[1]


async def test_w2_a_rebound_host_is_refused_before_anyone_logs_in(node: ProcessCluster) -> None:
    url = node.urls[0]
    await _queue_with(url, "w2-host", 3)
    for host in ("rebind.attacker.example", "rebind.attacker.example:" + _port(url), "localhost.evil"):
        got = await call(
            "POST",
            f"{url}/api/queues/w2-host/get",
            authorization=GUEST,
            data=AUTO_ACK_GET,
            headers={"Host": host, "Content-Type": "application/json"},
        )
        assert got.status == 421, (host, got.body)
        assert got.body["error"] == "misdirected_request", got.body
    assert await _ready(url, "w2-host") == 3
    for host in ("localhost", "127.0.0.1", "[::1]", "QUEUES.example.", "queues.example:" + _port(url)):
        answer = await call("GET", f"{url}/api/whoami", authorization=ADMIN, headers={"Host": host})
        assert answer.status == 200, (host, answer.body)


async def test_w2_allowed_hosts_star_answers_any_host_and_gives_up_the_rebinding_check(
    tmp_path: Path,
) -> None:
    """`allowed_hosts = *` answers to any `Host` (for a node behind a proxy that checks it): a page of a
    rebound name is then same-origin with the node and may act; a page of another origin still may not."""
    cluster = ProcessCluster.start(tmp_path, 1, env={"QUORUMQ_ALLOWED_HOSTS": "*"})
    try:
        url = cluster.urls[0]
        await _queue_with(url, "w2-any-host", 2)
        for host in ("rebind.attacker.example", "rebind.attacker.example:" + _port(url), "anything.test"):
            answer = await call("GET", f"{url}/api/whoami", authorization=ADMIN, headers={"Host": host})
            assert answer.status == 200, (host, answer.body)
        rebound = "rebind.attacker.example:" + _port(url)
        same_origin = {"Host": rebound, "Origin": "http://" + rebound, "Content-Type": "application/json"}
        foreign = {**same_origin, "Origin": FOREIGN}
        refused = await call(
            "POST",
            f"{url}/api/queues/w2-any-host/get",
            authorization=GUEST,
            data=AUTO_ACK_GET,
            headers=foreign,
        )
        assert refused.status == 403 and refused.body["error"] == "cross_origin", refused.body
        got = await call(
            "POST",
            f"{url}/api/queues/w2-any-host/get",
            authorization=GUEST,
            data=AUTO_ACK_GET,
            headers=same_origin,
        )
        assert got.status == 200 and len(got.body) == 2, got.body  # the rebound page, as the loopback guest
    finally:
        cluster.stop()


async def test_w2_the_guest_is_refused_to_a_foreign_origin(node: ProcessCluster) -> None:
    url = node.urls[0]
    foreign = await call("GET", f"{url}/api/whoami", authorization=GUEST, headers={"Origin": FOREIGN})
    assert foreign.status == 401 and "origin" in foreign.body["reason"], foreign.body
    own = await call("GET", f"{url}/api/whoami", authorization=GUEST, headers={"Origin": url})
    assert own.status == 200 and own.body["name"] == "guest", own.body


async def test_w2_the_loopback_guest_ends_once_an_administrator_exists(tmp_path: Path) -> None:
    unset = {"QUORUMQ_LOOPBACK_GUEST": "", "QUORUMQ_BOOTSTRAP_USER": "", "QUORUMQ_BOOTSTRAP_PASSWORD": ""}
    cluster = ProcessCluster.start(tmp_path, 1, env=unset)
    try:
        url = cluster.urls[0]
        assert (await call("GET", f"{url}/api/whoami", authorization=GUEST)).status == 200
        admin = {"password": "a-long-admin-password", "tags": ["administrator"]}
        created = await call("PUT", f"{url}/api/users/first-admin", authorization=GUEST, json=admin)
        assert created.status in (201, 204), created.body
        refused = await call("GET", f"{url}/api/whoami", authorization=GUEST)
        assert refused.status == 401 and "administrator" in refused.body["reason"], refused.body
        first = basic_header("first-admin", "a-long-admin-password")
        assert (await call("GET", f"{url}/api/whoami", authorization=first)).status == 200
    finally:
        cluster.stop()


async def test_w2_a_bootstrapped_cluster_has_no_guest_unless_asked(tmp_path: Path) -> None:
    cluster = ProcessCluster.start(tmp_path, 1, env={"QUORUMQ_LOOPBACK_GUEST": ""})
    try:
        url = cluster.urls[0]
        refused = await call("GET", f"{url}/api/whoami", authorization=GUEST)
        assert refused.status == 401, refused.body
        assert (await call("GET", f"{url}/api/whoami", authorization=ADMIN)).status == 200
    finally:
        cluster.stop()


async def test_w3_a_401_carries_no_basic_challenge(node: ProcessCluster) -> None:
    for path in ("/api/overview", "/metrics", "/api/queues/w3-q/messages"):
        answer = await call("GET", node.urls[0] + path)
        assert answer.status == 401, (path, answer.body)
        assert "WWW-Authenticate" not in answer.headers, (path, answer.headers)


async def test_w3_a_websocket_upgrade_from_a_foreign_origin_is_refused(node: ProcessCluster) -> None:
    url = node.urls[0]
    async with aiohttp.ClientSession(headers=HARNESS_HEADERS) as session:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await session.ws_connect(url + "/api/stream", origin=FOREIGN)
        assert refused.value.status == 403
        with pytest.raises(aiohttp.WSServerHandshakeError) as cross_site:
            await session.ws_connect(url + "/api/stream", headers={"Sec-Fetch-Site": "cross-site"})
        assert cross_site.value.status == 403
        async with session.ws_connect(url + "/api/stream", origin=url) as same_origin:
            assert not same_origin.closed


async def test_w4_a_body_a_form_can_send_is_refused(node: ProcessCluster) -> None:
    url = node.urls[0]
    await _queue_with(url, "w4-form", 2)
    for content_type in (
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ):
        got = await call(
            "POST",
            f"{url}/api/queues/w4-form/get",
            authorization=ADMIN,
            data=AUTO_ACK_GET,
            headers={"Content-Type": content_type},
        )
        assert got.status == 415, (content_type, got.body)
        published = await call(
            "POST",
            f"{url}/api/queues/w4-form/messages",
            authorization=ADMIN,
            data=b'{"messages": [{"body": "forged"}]}',
            headers={"Content-Type": content_type},
        )
        assert published.status == 415, (content_type, published.body)
    assert await _ready(url, "w4-form") == 2


async def test_w4_a_foreign_origin_may_not_act(node: ProcessCluster) -> None:
    url = node.urls[0]
    await _queue_with(url, "w4-origin", 2)
    for foreign in ({"Origin": FOREIGN}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}):
        got = await call(
            "POST", f"{url}/api/queues/w4-origin/get", authorization=ADMIN, json={"count": 9}, headers=foreign
        )
        assert got.status == 403 and got.body["error"] == "cross_origin", (foreign, got.body)
        purged = await call(
            "DELETE", f"{url}/api/queues/w4-origin/contents", authorization=ADMIN, headers=foreign
        )
        assert purged.status == 403, (foreign, purged.body)
    assert await _ready(url, "w4-origin") == 2
    own = {"Origin": url, "Sec-Fetch-Site": "same-origin"}
    got = await call(
        "POST",
        f"{url}/api/queues/w4-origin/get",
        authorization=ADMIN,
        json={"count": 1, "ack": "auto"},
        headers=own,
    )
    assert got.status == 200 and len(got.body) == 1, got.body
    read = await call("GET", f"{url}/api/queues/w4-origin", authorization=ADMIN, headers={"Origin": FOREIGN})
    assert read.status == 200, read.body  # a read answers, and without CORS the foreign page cannot see it


async def test_w15_answers_refuse_frames_and_sniffing_and_message_bodies_are_not_stored(
    node: ProcessCluster,
) -> None:
    url = node.urls[0]
    await _queue_with(url, "w15-q", 1)
    for method, path in (
        ("GET", "/api/queues/w15-q/messages/peek?position=1"),
        ("GET", "/api/queues/w15-q/messages"),
        ("POST", "/api/queues/w15-q/get"),
        ("GET", "/api/whoami"),
        ("GET", "/api/health"),
    ):
        answer = await call(method, url + path, authorization=ADMIN, json={} if method == "POST" else None)
        assert answer.status == 200, (path, answer.body)
        assert answer.headers["X-Content-Type-Options"] == "nosniff", path
        assert answer.headers["X-Frame-Options"] == "DENY", path
        assert answer.headers["Cache-Control"] == "no-store", path
        assert "Strict-Transport-Security" not in answer.headers, path
    ui = await call("GET", url + "/")
    assert ui.headers["X-Frame-Options"] == "DENY" and ui.headers["Cache-Control"] == "no-cache"
    assert "frame-ancestors 'none'" in ui.headers["Content-Security-Policy"]


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
async def test_w15_https_answers_carry_hsts(tmp_path: Path) -> None:
    env = make_certificates(tmp_path)
    cluster = ProcessCluster.start(tmp_path / "data", 1, env=env)
    try:
        trust = ssl.create_default_context(cafile=env["QUORUMQ_TLS_CA"])
        async with (
            aiohttp.ClientSession() as session,
            session.get(cluster.urls[0] + "/api/health", ssl=trust) as answer,
        ):
            assert answer.status == 200
            assert answer.headers["Strict-Transport-Security"].startswith("max-age=")
    finally:
        cluster.stop()
