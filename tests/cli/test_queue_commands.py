"""The queue commands against a fake node: results in table and JSON form, exit codes for failures."""

import json

import pytest
from click.testing import CliRunner
from fake_node import FakeNode

from cli.app import cli


def run(node: str, *args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--node", node, *args], input=stdin)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def test_declare_parses_arg_values_as_json(node_address: str, fake_node: FakeNode) -> None:
    code, out, _ = run(
        node_address,
        "declare",
        "orders",
        "--arguments",
        '{"x-overflow": "reject-publish"}',
        "--arg",
        "x-max-length=10",
        "--arg",
        "x-dead-letter-queue=dlq",
    )
    assert (code, out) == (0, "queue 'orders' declared\n")
    assert fake_node.queues["orders"].arguments == {
        "x-overflow": "reject-publish",
        "x-max-length": 10,
        "x-dead-letter-queue": "dlq",
    }
    code, out, _ = run(node_address, "--formatter", "json", "declare", "orders", "--arguments", "{}")
    assert code == 1  # different arguments: 409


def test_declare_of_existing_queue_with_same_arguments_says_so_in_json(node_address: str) -> None:
    run(node_address, "declare", "q", "--arg", "x-max-length=5")
    code, out, _ = run(node_address, "--formatter", "json", "declare", "q", "--arg", "x-max-length=5")
    assert code == 0
    assert json.loads(out) == {"queue": "q", "created": False, "arguments": {"x-max-length": 5}}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["declare", "q", "--arg", "novalue"], "expected KEY=VALUE"),
        (["declare", "q", "--arguments", "{not json"], "not valid JSON"),
        (["declare", "q", "--arguments", "[1]"], "must be a JSON object"),
        (["publish", "q"], "nothing to publish"),
        (["publish", "q", "body", "--size", "10"], "--size generates bodies"),
        (["publish", "q", "--count", "0"], "--count"),
        (["publish", "q", "body", "--wait", "30001"], "--wait"),
        (["consume", "q", "--no-ack", "--nack"], "exclude each other"),
        (["consume", "q", "--no-ack", "--leave-unacked"], "exclude each other"),
        (["consume", "q", "--no-ack", "--work", "1"], "settled already"),
        (["nack", "q", "1", "--reject", "bad", "--delay", "5"], "not with --reject"),
        (["ack", "q"], "IDS"),
        (["ack", "q", "x"], "IDS"),
        (["queues", "--no-such-option"], "No such option"),
        (["no-such-command"], "No such command"),
        (["get", "q", "--ack", "sometimes"], "--ack"),
    ],
)
def test_bad_input_is_a_usage_error_with_exit_64(node_address: str, args: list[str], message: str) -> None:
    code, out, err = run(node_address, *args)
    assert code == 64
    assert message in err
    assert "Traceback" not in out + err


def test_server_4xx_exits_1_with_the_server_reason(node_address: str) -> None:
    code, _, err = run(node_address, "declare", "q", "--arg", "max-length=1")
    assert code == 1
    assert err == "Error: unknown queue argument 'max-length' (bad_argument, HTTP 400)\n"
    code, _, err = run(node_address, "purge", "missing")
    assert code == 1
    assert "no queue 'missing'" in err


def test_unreachable_node_exits_69_naming_the_nodes_tried(unused_address: str) -> None:
    code, out, err = run(unused_address, "queues")
    assert code == 69
    assert f"tried http://{unused_address}" in err
    assert out == ""


def test_nodes_come_from_the_environment_comma_separated(node_address: str, unused_address: str) -> None:
    result = CliRunner().invoke(
        cli, ["--formatter", "json", "status"], env={"QUORUMQ_NODES": f"{unused_address},{node_address}"}
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["health"] == {"status": "ok", "leader_of": 1}


def test_publish_bodies_headers_and_file_lines(node_address: str, fake_node: FakeNode) -> None:
    run(node_address, "declare", "q")
    code, out, _ = run(node_address, "publish", "q", "one", "two", "--header", "k=1", "--count", "3")
    assert (code, out) == (0, "published 3 message(s) to 'q', confirmed ids 1..3\n")
    code, out, _ = run(node_address, "--formatter", "json", "publish", "q", "--file", "-", stdin=b"a\n\xff\n")
    assert json.loads(out) == {"queue": "q", "published": 2, "ids": [4, 5]}
    sent = [message for _, message in fake_node.queues["q"].ready]
    assert [message["body"] for message in sent] == ["one", "two", "one", "a", b"\xff"]
    assert sent[0]["headers"] == {"k": 1}


def test_publish_waits_for_room_as_long_as_asked(node_address: str, fake_node: FakeNode) -> None:
    run(node_address, "declare", "q")
    assert run(node_address, "publish", "q", "one", "--wait", "2500")[0] == 0
    assert run(node_address, "publish", "q", "two")[0] == 0
    assert fake_node.publish_waits == [2500, 0]


def test_publish_generates_bodies_of_the_requested_size(node_address: str, fake_node: FakeNode) -> None:
    run(node_address, "declare", "q")
    code, _, _ = run(node_address, "publish", "q", "--count", "250", "--size", "64", "--batch", "100")
    assert code == 0
    ready = fake_node.queues["q"].ready
    assert len(ready) == 250
    assert {len(message["body"]) for _, message in ready} == {64}


def test_consume_prints_and_acks_until_count(node_address: str, fake_node: FakeNode) -> None:
    run(node_address, "declare", "q")
    run(node_address, "publish", "q", "a", "b", "c")
    code, out, _ = run(node_address, "--formatter", "json", "consume", "q", "--count", "2")
    assert code == 0
    assert [json.loads(line)["body"] for line in out.splitlines()] == ["a", "b"]
    queue = fake_node.queues["q"]
    assert (len(queue.ready), len(queue.unacked), queue.consumers) == (1, 0, 0)


def test_consume_nack_requeues_and_timeout_stops_when_idle(node_address: str, fake_node: FakeNode) -> None:
    run(node_address, "declare", "q")
    run(node_address, "publish", "q", "a")
    code, out, _ = run(node_address, "consume", "q", "--count", "1", "--nack")
    assert code == 0
    assert out.splitlines() == ["#1: a", "1 message(s) consumed from 'q', nacked"]
    assert [message_id for message_id, _ in fake_node.queues["q"].ready] == [1]
    code, out, _ = run(node_address, "consume", "q", "--timeout", "0.2", "--prefetch", "1")
    assert code == 0
    assert out.splitlines()[-1] == "1 message(s) consumed from 'q', acked"


def test_get_prints_a_delivery_table_or_json(node_address: str) -> None:
    run(node_address, "declare", "q")
    run(node_address, "publish", "q", "hello", "world")
    code, out, _ = run(node_address, "get", "q")
    assert code == 0
    assert "hello" in out and "world" not in out and "delivery count" in out
    code, out, _ = run(node_address, "--formatter", "json", "get", "q", "--count", "5")
    assert [delivery["body"] for delivery in json.loads(out)] == ["world"]


def test_queues_table_and_json_show_the_same_queues(node_address: str) -> None:
    run(node_address, "declare", "alpha")
    run(node_address, "publish", "alpha", "x", "y")
    code, out, _ = run(node_address, "queues")
    assert code == 0
    lines = out.splitlines()  # not a terminal: tab-separated, as RabbitMQ's CLIs print for programs
    assert lines[0].split("\t") == [
        "vhost",
        "name",
        "messages",
        "ready",
        "unacked",
        "consumers",
        "leader",
        "members",
    ]
    assert lines[1].split("\t") == ["/", "alpha", "2", "2", "0", "0", "n1", "n1, n2, n3"]
    code, out, _ = run(node_address, "--formatter", "json", "queues")
    assert [(queue["name"], queue["messages_ready"]) for queue in json.loads(out)] == [("alpha", 2)]


def test_status_shows_nodes_their_alarms_and_health(node_address: str) -> None:
    code, out, _ = run(node_address, "status")
    assert code == 0
    assert "127.0.0.1:8180" in out and "leader_of" in out
    rows = {
        line.split()[0]: line.split()[-1] for line in out.splitlines() if line.startswith(("n1", "n2", "n3"))
    }
    assert rows == {"n1": "none", "n2": "disk", "n3": "unknown"}


def test_purge_and_delete_report_what_they_did(node_address: str, fake_node: FakeNode) -> None:
    run(node_address, "declare", "q")
    run(node_address, "publish", "q", "a", "b")
    assert run(node_address, "purge", "q")[1] == "purged 2 message(s) from 'q'\n"
    code, out, _ = run(node_address, "--formatter", "json", "delete", "q")
    assert (code, json.loads(out)) == (0, {"queue": "q", "deleted": True})
    assert fake_node.queues == {}


@pytest.mark.parametrize(
    ("given", "parsed"),
    [
        (["queues", "-n", "h:1", "-f", "json"], ["-n", "h:1", "-f", "json", "queues"]),
        (["users", "list", "--password", "pw"], ["--password", "pw", "users", "list"]),
        (  # set-permissions has no --user: it is the login; a value of its own option stays with it
            ["users", "set-permissions", "bob", "--configure", "-q", "--user", "admin"],
            ["--user", "admin", "users", "set-permissions", "bob", "--configure", "-q"],
        ),
        (["consume", "q", "--reject", "-q", "-q"], ["-q", "consume", "q", "--reject", "-q"]),
        (["server", "--node", "n1", "-f", "json"], ["-f", "json", "server", "--node", "n1"]),
        (["publish", "q", "--", "-n", "x"], ["publish", "q", "--", "-n", "x"]),
        (
            ["--request-timeout", "5", "get", "q", "--timeout=1"],
            ["--request-timeout", "5", "get", "q", "--timeout=1"],
        ),
    ],
)
def test_rule_global_options_after_the_command_move_before_it_unless_the_command_takes_them(
    given: list[str], parsed: list[str]
) -> None:
    assert cli._globals_first(given) == parsed
