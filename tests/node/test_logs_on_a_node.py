"""A real node's logs: JSON lines when stderr is no terminal, each with the node's name; an access log
line per request at info carrying the request's id (the caller's X-Request-Id, answered back) and its
queue; leadership lines with the group and the term."""

from __future__ import annotations

import json
import logging
import urllib.request

from node_helpers import HARNESS_HEADERS

from cli.node_processes import ProcessCluster
from cluster import node_logging


def call(url: str, method: str, path: str, body: dict | None = None, request_id: str = "") -> tuple[int, str]:
    headers = {**HARNESS_HEADERS, "Content-Type": "application/json"}
    if request_id:
        headers["X-Request-Id"] = request_id
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, headers=headers, method=method)
    with urllib.request.urlopen(request, timeout=10) as answer:
        return answer.status, answer.headers["X-Request-Id"]


def test_logs_are_json_lines_with_the_request_the_queue_and_the_term(one_node: ProcessCluster) -> None:
    node = one_node.nodes[0]
    assert call(node.url, "PUT", "/api/queues/logged", {}, request_id="req-declare-1") == (
        201,
        "req-declare-1",
    )
    status, made = call(node.url, "POST", "/api/queues/logged/messages", {"messages": [{"body": "x"}]})
    assert status == 201 and len(made) == 16  # no id given: the node made one
    call(node.url, "GET", "/api/queues/logged", request_id="bad id with spaces")
    node.stop()  # every record written
    records = [json.loads(line) for line in node.log_path.read_text().splitlines() if line.startswith("{")]
    assert records and all(r["node"] == node.name and r["time"] and r["level"] for r in records)
    access = [r for r in records if r["logger"] == "quorumq.access"]
    declare = next(r for r in access if '"PUT /api/queues/logged HTTP/1.1" 201' in r["message"])
    assert (declare["level"], declare["request_id"], declare["queue"]) == ("INFO", "req-declare-1", "logged")
    publish = next(r for r in access if "POST /api/queues/logged/messages" in r["message"])
    assert (publish["request_id"], publish["queue"]) == (made, "logged")
    read = next(r for r in access if '"GET /api/queues/logged HTTP' in r["message"])
    assert read["request_id"] != "bad id with spaces" and len(read["request_id"]) == 16
    leading = [r for r in records if "leading in term" in r["message"]]
    assert {r["group"] for r in leading} >= {"meta"} and all(r["term"] >= 1 for r in leading)


def test_text_lines_carry_the_same_context() -> None:
    formatter = node_logging.TextFormatter()
    record = logging.LogRecord("quorumq.access", logging.INFO, __file__, 1, "served %s", ("it",), None)
    record.node, record.request_id, record.queue, record.term = "node1", "r1", "orders", 3
    line = formatter.format(record)
    assert line.endswith("node1 INFO quorumq.access: served it [request_id=r1 queue=orders term=3]")
