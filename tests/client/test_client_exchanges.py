"""Exchanges and bindings in the client: the management API's paths and bodies, unbinding by the listed
properties key, publishes through an exchange retried with one publisher+seq and answered as a
RoutedPublish, and the routing revision a client heard carried by its exchange publishes (HTTP header,
stream field) so that they are routed after its own changes."""

from typing import Any

import msgpack
import pytest
from aiohttp import web
from client_fakes import error, published, serve

from quorumq import Client, NotFoundError, ProtocolError, RoutedPublish
from quorumq.stream import VERSION

REVISION = "X-Quorumq-Routing-Revision"
ROUTED = {
    "routed": {
        "audit": {"ids": [7, 8], "duplicate": False, "positions": [0, 1]},
        "eu": {"ids": [3], "duplicate": False, "positions": [1]},
    },
    "unroutable": [2],
}
EVERY_ONE = {"routed": {"audit": {"ids": [4, 5, 6], "duplicate": False}}}  # all of three messages
BINDINGS = [
    {"routing_key": "eu", "arguments": {}, "properties_key": "eu"},
    {"routing_key": "eu", "arguments": {"x-match": "any"}, "properties_key": "eu~0123abcd"},
]


class RoutingNode:
    """The exchange and binding endpoints of a node: each request's method, raw path, body and routing
    revision header kept; a change answered with `revision` (then one higher); a publish answered by
    what `publish_answers` says next (a status, 201 when they ran out) and, unless a 503, `answer`."""

    def __init__(
        self, revision: int, publish_answers: list[int] | None = None, answer: dict[str, Any] = ROUTED
    ) -> None:
        self.revision = revision
        self.publish_answers = publish_answers or []
        self.answer = answer
        self.requests: list[tuple[str, str, Any, str | None]] = []

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self.keep])
        router = app.router
        for path in ("/api/exchanges/{vhost}/{x}", "/api/bindings/{vhost}/e/{x}/{kind}/{d}/{props}"):
            router.add_route("*", path, self.change)
        router.add_post("/api/bindings/{vhost}/e/{x}/{kind}/{d}", self.bind)
        router.add_get("/api/bindings/{vhost}/e/{x}/{kind}/{d}", self.listed)
        router.add_get("/api/bindings/{vhost}", self.listed)
        router.add_get("/api/exchanges/{vhost}/{x}/bindings/source", self.listed)
        router.add_post("/api/exchanges/{vhost}/{x}/publish", self.publish)
        return app

    @web.middleware
    async def keep(self, request: web.Request, handler: Any) -> web.StreamResponse:
        body = await published(request) if request.can_read_body else None
        self.requests.append((request.method, request.raw_path, body, request.headers.get(REVISION)))
        return await handler(request)

    def changed(self, response: web.Response) -> web.Response:
        response.headers[REVISION] = str(self.revision)
        self.revision += 1
        return response

    async def change(self, request: web.Request) -> web.Response:
        if request.method == "GET":
            return web.json_response({"name": request.match_info["x"], "type": "topic"})
        created = request.method == "PUT" and request.match_info["x"] != "existing"
        return self.changed(web.json_response({}, status=201) if created else web.Response(status=204))

    async def bind(self, request: web.Request) -> web.Response:
        return self.changed(web.json_response({"properties_key": "eu"}, status=201))

    async def listed(self, request: web.Request) -> web.Response:
        return web.json_response(BINDINGS)

    async def publish(self, request: web.Request) -> web.Response:
        status = self.publish_answers.pop(0) if self.publish_answers else 201
        if status == 503:
            return error(503, "no_leader", "election running")
        return web.json_response(self.answer, status=status)


def sent(node: RoutingNode, method: str) -> list[tuple[str, Any, str | None]]:
    return [(path, body, revision) for m, path, body, revision in node.requests if m == method]


async def test_exchanges_and_bindings_go_to_the_management_api_paths_of_the_vhost() -> None:
    node = RoutingNode(revision=1)
    async with serve(node.app()) as base, Client([base], stream=False) as client:
        assert await client.declare_exchange("events", "topic", arguments={"alternate-exchange": "lost"})
        assert not await client.declare_exchange("existing", "fanout", internal=True)
        await client.delete_exchange("events", if_unused=True)
        assert (await client.exchange(""))["name"] == "amq.default"
        assert await client.bind("events", "eu", "eu") == {"properties_key": "eu"}
        await client.bind_exchange("events", "by/region", "#")
        assert await client.bindings() == BINDINGS
        assert await client.bindings(source="events") == BINDINGS
    assert sent(node, "PUT") == [
        (
            "/api/exchanges/%2F/events",
            {
                "type": "topic",
                "durable": True,
                "auto_delete": False,
                "internal": False,
                "arguments": {"alternate-exchange": "lost"},
            },
            None,
        ),
        (
            "/api/exchanges/%2F/existing",
            {"type": "fanout", "durable": True, "auto_delete": False, "internal": True, "arguments": {}},
            None,
        ),
    ]
    assert sent(node, "DELETE") == [("/api/exchanges/%2F/events?if-unused=true", None, None)]
    assert [(path, body) for path, body, _ in sent(node, "POST")] == [
        ("/api/bindings/%2F/e/events/q/eu", {"routing_key": "eu", "arguments": {}}),
        ("/api/bindings/%2F/e/events/e/by%2Fregion", {"routing_key": "#", "arguments": {}}),
    ]
    assert [path for path, *_ in sent(node, "GET")] == [
        "/api/exchanges/%2F/amq.default",
        "/api/bindings/%2F",
        "/api/exchanges/%2F/events/bindings/source",
    ]


@pytest.mark.parametrize(
    ("arguments", "deleted"),
    [
        (None, "/api/bindings/%2F/e/events/q/eu/eu"),
        ({"x-match": "any"}, "/api/bindings/%2F/e/events/q/eu/eu~0123abcd"),
    ],
)
async def test_unbind_deletes_the_binding_its_listing_names_by_key_and_arguments(
    arguments: dict[str, Any] | None, deleted: str
) -> None:
    node = RoutingNode(revision=1)
    async with serve(node.app()) as base, Client([base]) as client:
        await client.unbind("events", "eu", "eu", arguments)
    assert [path for path, *_ in sent(node, "DELETE")] == [deleted]


async def test_unbinding_what_is_not_bound_is_not_found_and_deletes_nothing() -> None:
    node = RoutingNode(revision=1)
    async with serve(node.app()) as base, Client([base]) as client:
        with pytest.raises(NotFoundError):
            await client.unbind_exchange("events", "eu", "us")
    assert [path for _, path, *_ in node.requests] == ["/api/bindings/%2F/e/events/e/eu"]


async def test_a_publish_through_an_exchange_is_retried_with_one_seq_and_answers_per_queue() -> None:
    node = RoutingNode(revision=1, publish_answers=[503, 200])
    async with serve(node.app()) as base, Client([base], stream=False) as client:
        routed = await client.publish_to_exchange("events", ["a", "b", "c"], "order.eu", mandatory=True)
    assert routed == RoutedPublish(
        routed={"audit": [7, 8], "eu": [3]}, positions={"audit": [0, 1], "eu": [1]}, unroutable=[2]
    )
    (first, _, _), (again, body, _) = sent(node, "POST")
    assert first == again == "/api/exchanges/%2F/events/publish"
    assert body == {
        "messages": [{"body": "a"}, {"body": "b"}, {"body": "c"}],
        "publisher": client.publisher_id,
        "seq": 1,
        "routing_key": "order.eu",
        "mandatory": True,
    }
    assert sent(node, "POST")[0][1] == body


async def test_a_queue_that_confirmed_fewer_ids_than_it_took_copies_breaks_the_contract() -> None:
    node = RoutingNode(revision=1, answer=EVERY_ONE)
    async with serve(node.app()) as base, Client([base], stream=False) as client:
        with pytest.raises(ProtocolError):
            await client.publish_to_exchange("", ["only one"], "audit")  # confirmed with 3 ids


async def test_rule_an_exchange_publish_carries_the_highest_routing_revision_heard_from_any_node() -> None:
    ahead, behind = RoutingNode(revision=7, publish_answers=[201, 503]), RoutingNode(revision=3)
    async with (
        serve(ahead.app()) as first,
        serve(behind.app()) as second,
        Client([first, second], stream=False) as client,
    ):
        await client.publish_to_exchange("events", "before any change")
        await client.bind("events", "eu", "eu")  # revision 7
        await client.publish_to_exchange("events", "after the bind")  # 503 here, then to `behind`
        await client.declare_exchange("events", "topic")  # revision 3 on `behind`: not news
        await client.publish_to_exchange("events", "after the declare")
    assert [revision for _, _, revision in sent(ahead, "POST")] == [None, None, "7"]
    assert [revision for _, _, revision in sent(behind, "POST")] == ["7", "7"]


def _stream_node(frames: list[dict[str, Any]]) -> web.Application:
    """A node that binds over HTTP (routing revision 5) and confirms a stream publish with EVERY_ONE."""

    async def stream(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.receive()
        await ws.send_bytes(msgpack.packb({"op": "hello", "version": VERSION}))
        async for message in ws:
            frame = msgpack.unpackb(message.data)
            frames.append(frame)
            await ws.send_bytes(msgpack.packb({"op": "confirm", "id": frame["id"], **EVERY_ONE}))
        return ws

    app = RoutingNode(revision=5).app()
    app.router.add_get("/api/stream", stream)
    return app


async def test_over_a_stream_an_exchange_publish_is_a_publish_frame_naming_the_exchange_and_revision() -> (
    None
):
    frames: list[dict[str, Any]] = []
    async with serve(_stream_node(frames)) as base, Client([base]) as client:
        await client.bind("events", "eu", "eu")
        routed = await client.publish_to_exchange("events", [b"a", b"b", b"c"], "order.eu", seq=9)
    assert routed == RoutedPublish(routed={"audit": [4, 5, 6]}, positions={"audit": [0, 1, 2]}, unroutable=[])
    [frame] = frames
    assert frame == {
        "op": "publish",
        "id": frame["id"],
        "exchange": "events",
        "vhost": "/",
        "routing_key": "order.eu",
        "routing_revision": 5,
        "messages": [{"body": b"a"}, {"body": b"b"}, {"body": b"c"}],
        "publisher": client.publisher_id,
        "seq": 9,
    }
