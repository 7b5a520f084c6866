"""A web page turned against the cluster, in a real browser (decision 0020). Pages of another origin (a
second HTTP server on this machine, another port: the same site to the browser, as any local dev
server is) try a text/plain form post, a `fetch` with credentials and a WebSocket to the node after the
browser cached the administrator's Basic credentials for it; and a page whose name was rebound to the
node's address (`rebind.test`, which chromium is told resolves to loopback) calls the API as the
loopback guest. Each is refused, and the queue keeps its messages. (A page of another site gets no
cached credentials from chromium for its fetches and WebSockets, as for third-party cookies; its form
posts, top-level navigations, do carry them.)"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import msgpack
import pytest
from browser_harness import chromium, until
from selenium.webdriver.remote.webdriver import WebDriver

from cli.node_processes import HARNESS_PASSWORD, HARNESS_USER, ProcessCluster
from quorumq import SyncClient

VICTIM = "victim"
STORED = 5
ADMIN = (HARNESS_USER, HARNESS_PASSWORD)
REBOUND = "rebind.test"


class AttackerSite:
    """The attacker's own web server: another origin than any node's, serving the pages it is given."""

    def __init__(self) -> None:
        self.pages: dict[str, bytes] = {}
        pages = self.pages

        class Pages(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                page = pages.get(self.path)
                self.send_response(200 if page is not None else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.end_headers()
                self.wfile.write(page or b"")

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Pages)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str, page: str) -> str:
        """Serve `page` at `path` and return its address."""
        self.pages[path] = page.encode()
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    running = ProcessCluster.start(tmp_path_factory.mktemp("attacked"), 1)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def attacker() -> Iterator[AttackerSite]:
    site = AttackerSite()
    yield site
    site.close()


@pytest.fixture(scope="module")
def browser(node: ProcessCluster) -> Iterator[WebDriver]:
    driver = chromium(f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1")
    port = node.nodes[0].http_port
    # What an operator does who once opened the API in a browser: its credentials are now cached there.
    driver.get(f"http://{HARNESS_USER}:{HARNESS_PASSWORD}@127.0.0.1:{port}/api/overview")
    yield driver
    driver.quit()


@pytest.fixture
def victim(node: ProcessCluster) -> str:
    """A queue holding `STORED` messages, whose depth each attack must leave as it was."""
    with SyncClient(node.urls, auth=ADMIN) as client:
        client.declare(VICTIM)
        client.purge(VICTIM)
        client.publish(VICTIM, [f"order {i}" for i in range(STORED)])
    return VICTIM


def _ready(node: ProcessCluster) -> int:
    with SyncClient(node.urls, auth=ADMIN) as client:
        return int(client.queue(VICTIM)["messages_ready"])


def _node_base(node: ProcessCluster) -> str:
    return f"http://127.0.0.1:{node.nodes[0].http_port}"


def _at(url: str, driver: WebDriver) -> bool:
    return bool(driver.current_url.startswith(url))


def _attack_log(driver: WebDriver) -> list[str]:
    return list(driver.execute_script("return window.attack || []"))


def test_w4_a_foreign_text_plain_form_cannot_drain_or_publish(
    node: ProcessCluster, attacker: AttackerSite, browser: WebDriver, victim: str
) -> None:
    target = f"{_node_base(node)}/api/queues/{victim}"
    forms = {
        "/drain": (f"{target}/get", '{"count": 100, "ack": "auto", "pad": "', '"}'),
        "/publish": (f"{target}/messages", '{"messages": [{"body": "forged by a form', '"}]}'),
    }
    for path, (action, name, value) in forms.items():
        page = f"""<!doctype html><form id="f" method="POST" enctype="text/plain" action="{action}">
            <input name='{name}' value='{value}'></form>
            <script>document.getElementById("f").submit()</script>"""
        browser.get(attacker.url(path, page))
        until(browser, partial(_at, action), f"the form posted to {action}")
        assert "cross_origin" in browser.page_source  # the node's 403, before any credential is looked at
    assert _ready(node) == STORED


def test_w4_a_foreign_fetch_with_credentials_cannot_drain_or_publish(
    node: ProcessCluster, attacker: AttackerSite, browser: WebDriver, victim: str
) -> None:
    target = f"{_node_base(node)}/api/queues/{victim}"
    page = f"""<!doctype html><script>
        window.attack = [];
        const send = (url, body) => fetch(url, {{method: "POST", mode: "no-cors", credentials: "include",
            headers: {{"Content-Type": "text/plain"}}, body}}).then(() => "sent", (e) => "failed " + e);
        Promise.all([
            send("{target}/get", '{{"count": 100, "ack": "auto"}}'),
            send("{target}/messages", '{{"messages": [{{"body": "forged by fetch"}}]}}'),
        ]).then((outcomes) => {{ window.attack = outcomes; }});
        </script>"""
    browser.get(attacker.url("/fetch", page))
    until(browser, lambda d: len(_attack_log(d)) == 2, "both fetches settled")
    assert _ready(node) == STORED


def test_w3_a_foreign_page_cannot_hijack_the_stream(
    node: ProcessCluster, attacker: AttackerSite, browser: WebDriver, victim: str
) -> None:
    hello = list(msgpack.packb({"op": "hello", "versions": [1]}))
    publish = list(
        msgpack.packb(
            {"op": "publish", "id": 1, "queue": victim, "messages": [{"body": "forged over the stream"}]}
        )
    )
    page = f"""<!doctype html><script>
        window.attack = [];
        const ws = new WebSocket("ws://127.0.0.1:{node.nodes[0].http_port}/api/stream");
        ws.binaryType = "arraybuffer";
        ws.onopen = () => {{ window.attack.push("open");
            ws.send(new Uint8Array({hello})); ws.send(new Uint8Array({publish})); }};
        ws.onmessage = () => window.attack.push("frame");
        ws.onclose = (event) => window.attack.push("closed " + event.code);
        </script>"""
    browser.get(attacker.url("/stream", page))

    def settled(d: WebDriver) -> list[str]:
        log = _attack_log(d)
        return log if any(e.startswith("closed") for e in log) or log.count("frame") >= 2 else []

    log = until(browser, settled, "the WebSocket refused, or hello and confirm")
    assert "open" not in log, log
    assert _ready(node) == STORED


def test_w2_a_rebound_name_cannot_drive_the_node_as_the_guest(
    node: ProcessCluster, browser: WebDriver, victim: str
) -> None:
    port = node.nodes[0].http_port
    browser.get(f"http://{REBOUND}:{port}/")  # the attacker's name, now resolving to the node: same origin
    status = browser.execute_async_script(
        """const done = arguments[arguments.length - 1];
        fetch("/api/queues/" + arguments[0] + "/get", {method: "POST",
            headers: {"Content-Type": "application/json", Authorization: "Basic " + btoa("guest:guest")},
            body: JSON.stringify({count: 100, ack: "auto"})})
            .then((r) => done(r.status), (e) => done(String(e)));""",
        victim,
    )
    assert status == 421, status
    assert _ready(node) == STORED
