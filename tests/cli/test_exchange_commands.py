"""The exchange and binding commands, and `publish --exchange`, against a fake node: what they send, what
they print in table and JSON form, and their exit codes."""

import json
from collections.abc import Iterator
from typing import Any

import msgpack
import pytest
from aiohttp import web
from click.testing import CliRunner
from fake_node import ThreadedServer, error

from cli.app import cli


class FakeRouting:
    """Exchanges and bindings in memory, each request kept as (method, raw path, body); an exchange
    publish is routed to the queues bound with its exact routing key."""

    def __init__(self) -> None:
        self.exchanges: dict[str, dict[str, Any]] = {"amq.direct": {"name": "amq.direct", "type": "direct"}}
        self.bindings: list[dict[str, Any]] = []
        self.requests: list[tuple[str, str, Any]] = []
        self.next_id = 1

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self.keep])
        router = app.router
        router.add_get("/api/exchanges/{vhost}", self.list_exchanges)
        router.add_put("/api/exchanges/{vhost}/{x}", self.declare)
        router.add_delete("/api/exchanges/{vhost}/{x}", self.delete)
        router.add_post("/api/exchanges/{vhost}/{x}/publish", self.publish)
        router.add_get("/api/exchanges/{vhost}/{x}/bindings/source", self.list_bindings)
        router.add_get("/api/bindings/{vhost}", self.list_bindings)
        router.add_get("/api/bindings/{vhost}/e/{x}/{kind}/{d}", self.list_bindings)
        router.add_post("/api/bindings/{vhost}/e/{x}/{kind}/{d}", self.bind)
        router.add_delete("/api/bindings/{vhost}/e/{x}/{kind}/{d}/{props}", self.unbind)
        return app

    @web.middleware
    async def keep(self, request: web.Request, handler: Any) -> web.StreamResponse:
        body = None
        if request.can_read_body:
            data = await request.read()
            body = (
                msgpack.unpackb(data) if request.content_type == "application/msgpack" else json.loads(data)
            )
        self.requests.append((request.method, request.raw_path, body))
        return await handler(request)

    def sent(self, method: str) -> list[tuple[str, Any]]:
        return [(path, body) for m, path, body in self.requests if m == method]

    async def list_exchanges(self, request: web.Request) -> web.Response:
        return web.json_response(list(self.exchanges.values()))

    async def declare(self, request: web.Request) -> web.Response:
        name, body = request.match_info["x"], await request.json()
        exchange = {"name": name, **body}
        if name not in self.exchanges:
            self.exchanges[name] = exchange
            return web.json_response({"exchange": name}, status=201)
        if self.exchanges[name] != exchange:
            return error(409, "precondition_failed", f"exchange '{name}' exists with another definition")
        return web.Response(status=204)

    async def delete(self, request: web.Request) -> web.Response:
        name = request.match_info["x"]
        if request.query.get("if-unused") == "true" and any(b["source"] == name for b in self.bindings):
            return error(409, "precondition_failed", f"exchange '{name}' in use")
        del self.exchanges[name]
        return web.Response(status=204)

    def between(self, request: web.Request) -> list[dict[str, Any]]:
        found = [b for b in self.bindings if b["source"] == request.match_info.get("x", b["source"])]
        if "d" in request.match_info:
            kind = "queue" if request.match_info["kind"] == "q" else "exchange"
            found = [
                b
                for b in found
                if (b["destination_type"], b["destination"]) == (kind, request.match_info["d"])
            ]
        return found

    async def list_bindings(self, request: web.Request) -> web.Response:
        return web.json_response(self.between(request))

    async def bind(self, request: web.Request) -> web.Response:
        body = await request.json()
        key = body["routing_key"] + "~digest" if body["arguments"] else body["routing_key"] or "~"
        binding = {
            "source": request.match_info["x"],
            "destination": request.match_info["d"],
            "destination_type": "queue" if request.match_info["kind"] == "q" else "exchange",
            "routing_key": body["routing_key"],
            "arguments": body["arguments"],
            "properties_key": key,
        }
        self.bindings.append(binding)
        return web.json_response(binding, status=201)

    async def unbind(self, request: web.Request) -> web.Response:
        self.bindings = [
            b
            for b in self.bindings
            if b not in self.between(request) or b["properties_key"] != request.match_info["props"]
        ]
        return web.Response(status=204)

    async def publish(self, request: web.Request) -> web.Response:
        body = msgpack.unpackb(await request.read())
        targets = [b["destination"] for b in self.between(request) if b["routing_key"] == body["routing_key"]]
        count = len(body["messages"])
        routed = {}
        for queue in targets:
            routed[queue] = {"ids": list(range(self.next_id, self.next_id + count)), "duplicate": False}
            self.next_id += count
        if targets:
            return web.json_response({"routed": routed}, status=201)
        return web.json_response(
            {"routed": {}, "unroutable": list(range(count))}, status=200 if body.get("mandatory") else 201
        )


@pytest.fixture
def routing() -> FakeRouting:
    return FakeRouting()


@pytest.fixture
def node(routing: FakeRouting) -> Iterator[str]:
    with ThreadedServer(routing.app()) as address:
        yield address


def run(node: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--node", node, *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def test_declare_sends_the_definition_and_says_whether_it_created_the_exchange(
    node: str, routing: FakeRouting
) -> None:
    declare = [
        "exchanges",
        "declare",
        "events",
        "--type",
        "topic",
        "--internal",
        "--alternate-exchange",
        "lost",
    ]
    assert run(node, *declare, "--arg", "x-limit=5") == (0, "exchange 'events' declared\n", "")
    code, out, _ = run(node, "-f", "json", *declare, "--arg", "x-limit=5")
    assert code == 0
    assert json.loads(out) == {
        "exchange": "events",
        "created": False,
        "type": "topic",
        "durable": True,
        "auto_delete": False,
        "internal": True,
        "arguments": {"x-limit": 5, "alternate-exchange": "lost"},
    }
    assert routing.sent("PUT")[0] == (
        "/api/exchanges/%2F/events",
        {
            "type": "topic",
            "durable": True,
            "auto_delete": False,
            "internal": True,
            "arguments": {"x-limit": 5, "alternate-exchange": "lost"},
        },
    )
    code, _, err = run(node, "exchanges", "declare", "events", "--type", "fanout")
    assert code == 1
    assert err == "Error: exchange 'events' exists with another definition (precondition_failed, HTTP 409)\n"


def test_exchanges_and_bindings_are_listed_as_tables_or_json(node: str) -> None:
    run(node, "exchanges", "declare", "events", "--type", "direct")
    run(node, "bindings", "add", "events", "eu", "-k", "eu")
    run(node, "bindings", "add", "events", "archive", "--exchange-destination", "--arg", "x-match=any")
    code, out, _ = run(node, "exchanges", "list")
    assert code == 0
    assert out.splitlines() == [
        "name\ttype\tdurable\tauto_delete\tinternal\targuments",
        "amq.direct\tdirect\t\t\t\t",
        "events\tdirect\tyes\tno\tno\t",
    ]
    code, out, _ = run(node, "bindings", "list", "--source", "events")
    assert out.splitlines() == [
        "source\tdestination\tdestination_type\trouting_key\targuments",
        "events\teu\tqueue\teu\t",
        "events\tarchive\texchange\t\tx-match=any",
    ]
    code, out, _ = run(node, "-f", "json", "bindings", "list")
    assert [binding["properties_key"] for binding in json.loads(out)] == ["eu", "~digest"]


def test_a_binding_is_added_and_removed_by_its_routing_key_and_arguments(
    node: str, routing: FakeRouting
) -> None:
    code, out, _ = run(node, "bindings", "add", "events", "eu", "--routing-key", "order.*.eu")
    assert (code, out) == (0, "binding of exchange 'events' to queue 'eu' (routing key 'order.*.eu') added\n")
    run(node, "bindings", "add", "events", "eu", "-k", "order.*.eu", "--arg", "region=eu")
    code, out, _ = run(node, "bindings", "remove", "events", "eu", "-k", "order.*.eu", "--arg", "region=eu")
    assert (code, out) == (
        0,
        "binding of exchange 'events' to queue 'eu' (routing key 'order.*.eu') removed\n",
    )
    assert routing.sent("DELETE") == [("/api/bindings/%2F/e/events/q/eu/order.%2A.eu~digest", None)]
    assert [b["arguments"] for b in routing.bindings] == [{}]
    code, _, err = run(
        node, "bindings", "remove", "events", "eu", "-k", "order.*.us", "--exchange-destination"
    )
    assert code == 1
    assert "no binding of 'events' to 'eu' with routing key 'order.*.us' (not_found, HTTP 404)" in err


def test_delete_if_unused_refuses_an_exchange_that_routes(node: str) -> None:
    run(node, "exchanges", "declare", "events", "--type", "fanout")
    run(node, "bindings", "add", "events", "eu")
    code, _, err = run(node, "exchanges", "delete", "events", "--if-unused")
    assert code == 1 and "precondition_failed" in err
    assert run(node, "exchanges", "delete", "events") == (0, "exchange 'events' deleted\n", "")


def test_publish_through_an_exchange_prints_the_ids_of_each_queue(node: str, routing: FakeRouting) -> None:
    run(node, "exchanges", "declare", "events", "--type", "direct")
    for queue in ("eu", "audit"):
        run(node, "bindings", "add", "events", queue, "-k", "order.eu")
    code, out, _ = run(node, "publish", "-e", "events", "-k", "order.eu", "a", "b", "c", "--batch", "2")
    assert code == 0
    assert out.splitlines() == [
        "published 3 message(s) through exchange 'events' (routing key 'order.eu')",
        "  to 'eu': confirmed ids 1, 2, 5",
        "  to 'audit': confirmed ids 3, 4, 6",
    ]
    [(path, first), (_, second)] = routing.sent("POST")[-2:]
    assert path == "/api/exchanges/%2F/events/publish"
    assert [m["body"] for m in first["messages"]] == ["a", "b"] and first["routing_key"] == "order.eu"
    assert [m["body"] for m in second["messages"]] == ["c"]


def test_unroutable_messages_are_reported_and_with_mandatory_exit_1(node: str, routing: FakeRouting) -> None:
    run(node, "exchanges", "declare", "events", "--type", "direct")
    code, out, _ = run(
        node, "-f", "json", "publish", "--exchange", "events", "-k", "nowhere", "x", "--count", "3"
    )
    assert code == 0
    assert json.loads(out) == {
        "exchange": "events",
        "routing_key": "nowhere",
        "published": 3,
        "routed": {},
        "unroutable": [0, 1, 2],
    }
    code, out, err = run(
        node, "publish", "-e", "events", "-k", "nowhere", "x", "y", "--batch", "1", "--mandatory"
    )
    assert code == 1
    assert out.splitlines()[-1] == "  2 message(s) reached no queue and were dropped"
    assert err == "Error: 2 message(s) reached no queue (unroutable)\n"
    assert routing.sent("POST")[-1][1]["mandatory"] is True


def test_the_default_exchange_is_named_amq_default_in_a_path(node: str, routing: FakeRouting) -> None:
    code, out, _ = run(node, "publish", "-e", "", "-k", "orders", "x")
    assert code == 0 and out.startswith("published 1 message(s) through the default exchange")
    assert routing.sent("POST")[-1][0] == "/api/exchanges/%2F/amq.default/publish"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["exchanges", "declare", "events"], "Missing option '--type'"),
        (["exchanges", "declare", "events", "--type", "x-delayed-message"], "--type"),
        (["exchanges", "declare", "events", "--type", "topic", "--arg", "novalue"], "expected KEY=VALUE"),
        (["bindings", "add", "events"], "Missing argument 'DESTINATION'"),
        (["publish"], "give the QUEUE to publish to, or --exchange"),
        (["publish", "q", "body", "--routing-key", "k"], "--routing-key and --mandatory go with --exchange"),
        (["publish", "q", "body", "--mandatory"], "--routing-key and --mandatory go with --exchange"),
        (["publish", "-e", "events"], "nothing to publish"),
    ],
)
def test_bad_input_is_a_usage_error_with_exit_64(node: str, args: list[str], message: str) -> None:
    code, out, err = run(node, *args)
    assert code == 64
    assert message in err
    assert "Traceback" not in out + err
