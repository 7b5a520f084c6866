"""Content filters on bindings (`x-filter`, issue 41, slice 4) on a real 3-node cluster over HTTP: a
topic exchange with one queue bound by a header filter and one by a body field filter takes each
message into the queues whose binding key and filter both match; a filter that does not parse, or
whose regex RE2 refuses, is a 400 that says why, and never becomes a binding."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest
from test_exchanges_on_a_cluster import GUEST, Http, bodies

from cli.node_processes import ProcessCluster
from quorumq import Client


@pytest.fixture
async def http(cluster: ProcessCluster) -> Any:
    async with aiohttp.ClientSession(headers=GUEST) as session:
        yield Http(session, cluster.urls)


def order(region: str | None, total: int, sku: str) -> dict[str, Any]:
    headers = {} if region is None else {"region": region}
    return {"body": json.dumps({"total": total, "items": [{"sku": sku}]}), "headers": headers}


async def test_each_queue_takes_what_its_binding_key_and_filter_both_match(
    cluster: ProcessCluster, http: Http
) -> None:
    async with Client(cluster.urls, timeout=30.0) as client:
        for queue in ("eu-orders", "big-a-orders"):
            await client.declare(queue)
        assert (await http.call(0, "PUT", "/api/exchanges/%2F/orders", {"type": "topic"}))[0] == 201
        by_header = {"routing_key": "order.#", "arguments": {"x-filter": "headers.region = 'eu'"}}
        status, made = await http.call(1, "POST", "/api/bindings/%2F/e/orders/q/eu-orders", by_header)
        assert status == 201, made
        by_body = {
            "routing_key": "order.*",
            "arguments": {"x-filter": "body.total >= 100 and body.items[0].sku matches '^A-'"},
        }
        status, made = await http.call(2, "POST", "/api/bindings/%2F/e/orders/q/big-a-orders", by_body)
        assert status == 201, made

        batch = {
            "messages": [
                order("eu", 50, "A-1"),  # eu only: too small
                order("us", 500, "A-2"),  # big only
                order("eu", 500, "A-3"),  # both
                order(None, 900, "B-4"),  # neither: no region, not an A item
                {"body": "<order/>", "headers": {"region": "us"}},  # neither: not JSON
            ],
            "mandatory": True,
        }
        status, answer = await http.publish(0, "orders", "order.created", batch)  # routed on node 0
        assert status == 200, answer  # mandatory, and some reached no queue
        assert answer["routed"]["eu-orders"]["positions"] == [0, 2]
        assert answer["routed"]["big-a-orders"]["positions"] == [1, 2]
        assert answer["unroutable"] == [3, 4]
        assert [json.loads(body)["items"][0]["sku"] for body in await bodies(client, "eu-orders")] == [
            "A-1",
            "A-3",
        ]
        assert [json.loads(body)["items"][0]["sku"] for body in await bodies(client, "big-a-orders")] == [
            "A-2",
            "A-3",
        ]

        # the exchange's own match comes first: a filter never lets in a key the binding does not take
        status, answer = await http.publish(
            2, "orders", "order.created.late", {"messages": [order("eu", 500, "A-5")]}
        )
        assert status == 201 and list(answer["routed"]) == ["eu-orders"], answer
        status, answer = await http.publish(1, "orders", "invoice.1", {"messages": [order("eu", 500, "A-6")]})
        assert status == 201 and answer == {"routed": {}, "unroutable": [0]}, answer


REFUSED = [
    (
        "headers.region == 'eu'",
        "expected a path (headers..., body...), a literal, 'not', 'exists' or '(' at character 17, found '='",
    ),
    (
        "headers.type matches '(order)\\.\\1'",
        "the regex at character 22 is not one RE2 accepts (no backreferences or lookaround)",
    ),
    ("headers.a = 1 or " * 60 + "headers.a = 1", "the filter has 304 nodes, more than 256"),
]


async def test_a_bad_filter_is_a_400_that_says_why_and_binds_nothing(
    cluster: ProcessCluster, http: Http
) -> None:
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.declare("q")
        await http.call(0, "PUT", "/api/exchanges/%2F/orders", {"type": "topic"})
        for content_filter, reason in REFUSED:
            binding = {"routing_key": "#", "arguments": {"x-filter": content_filter}}
            status, answer = await http.call(1, "POST", "/api/bindings/%2F/e/orders/q/q", binding)
            assert status == 400 and answer["error"] == "bad_request", answer
            assert answer["reason"].startswith(f"invalid arg 'x-filter': {reason}"), answer
        status, listed = await http.call(2, "GET", "/api/bindings/%2F/e/orders/q/q")
        assert status == 200 and listed == [], listed
