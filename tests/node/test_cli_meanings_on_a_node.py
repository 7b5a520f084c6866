"""The CLIs keep RabbitMQ's meanings, against a real node: `consume --no-ack` is AMQP's no-ack, `get`
holds what it takes until `ack`/`nack` settle it, global options come before or after the command, usage
errors exit 64, and tables are tab-separated for programs (headers left out with --silent, informational
lines with --quiet); `quorumq server` lists its settings and names a bad one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from node_helpers import every_node_writes_the_newest_queue_ops

from cli.app import cli as quorumq
from cli.node_processes import ProcessCluster
from cli.queues import cli as quorumq_queues
from cluster.config import setting_docs
from quorumq import SyncClient

QUORUMQ = str(Path(sys.executable).with_name("quorumq"))


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real node for the whole module (each test uses queues of its own)."""
    cluster = ProcessCluster.start(tmp_path_factory.mktemp("cli"), count=1)
    try:
        every_node_writes_the_newest_queue_ops(cluster)
        yield cluster.urls[0]
    finally:
        cluster.stop()


def run(*args: str, cli=quorumq) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    result = CliRunner().invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def counts(node: str, queue: str) -> tuple[int, int]:
    with SyncClient([node]) as client:
        stats = client.queue(queue)
    return stats["messages_ready"], stats["messages_unacknowledged"]


def test_consume_no_ack_settles_on_delivery_and_leave_unacked_returns_them(node: str) -> None:
    assert run("-n", node, "declare", "no-ack")[0] == 0
    assert run("-n", node, "publish", "no-ack", "--count", "5")[0] == 0
    code, out, err = run("-n", node, "consume", "no-ack", "--no-ack", "--count", "3", "--prefetch", "2")
    assert code == 0, err
    assert out.splitlines()[-1] == "3 message(s) consumed from 'no-ack', settled on delivery"
    assert counts(node, "no-ack") == (2, 0)  # settled, not returned when the consumer ended
    code, out, err = run("-n", node, "consume", "no-ack", "--leave-unacked", "--count", "2")
    assert code == 0, err
    assert out.splitlines()[-1] == "2 message(s) consumed from 'no-ack', left unacked"
    assert counts(node, "no-ack") == (2, 0)  # back in the queue once the consumer ended


def test_get_holds_by_default_until_ack_or_nack_settles(node: str) -> None:
    run("-n", node, "declare", "held")
    run("-n", node, "publish", "held", "a", "b", "c")
    code, out, err = run("get", "held", "--count", "3", "-n", node, "-f", "json")
    assert code == 0, err
    ids = [row["id"] for row in json.loads(out)]
    assert counts(node, "held") == (0, 3)
    code, out, err = run("ack", "held", str(ids[0]), "-n", node)
    assert (code, out) == (0, f"1 message(s) of 'held' acked: {ids[0]}\n"), err
    code, out, err = run("nack", "held", str(ids[1]), "-n", node, "--formatter", "json")
    assert (code, json.loads(out)) == (0, {"queue": "held", "returned": [ids[1]], "warning": None}), err
    assert counts(node, "held") == (1, 1)
    code, out, err = run("nack", "held", str(ids[2]), "--reject", "bad total", "-n", node)
    assert code == 0, err
    assert counts(node, "held") == (1, 0)  # no dead-letter target: dropped
    code, out, _ = run("-n", node, "-f", "json", "get", "held", "--ack", "auto")
    assert [(row["body"], row["delivery_count"]) for row in json.loads(out)] == [("b", 1)]
    assert counts(node, "held") == (0, 0)


def test_ack_of_ids_nobody_holds_changes_nothing_and_says_so(node: str) -> None:
    run("-n", node, "declare", "none-held")
    code, _, err = run("-n", node, "ack", "none-held", "99")
    assert code == 0 and err.startswith("Warning: ") and "99" in err, err


def test_usage_errors_exit_64_in_both_clis(node: str) -> None:
    for args, cli in [
        (["-n", node, "consume", "q", "--no-ack", "--nack"], quorumq),
        (["-n", node, "frobnicate"], quorumq),
        (["-n", node, "peek", "q", "0"], quorum_queues := quorumq_queues),
        (["-n", node, "quorum_status"], quorum_queues),
        (["--timeout", "0", "quorum_status", "q"], quorum_queues),
    ]:
        code, out, err = run(*args, cli=cli)
        assert code == 64, (args, out, err)
        assert "Traceback" not in out + err


def test_quorumq_queues_takes_global_options_after_the_command_and_prints_tab_separated(node: str) -> None:
    run("-n", node, "declare", "tabs")
    code, out, err = run("quorum_status", "tabs", "--node", node, cli=quorumq_queues)
    assert code == 0, err
    banner, header, row = out.splitlines()
    assert banner.startswith("Status of quorum queue 'tabs'")
    assert header.split("\t")[:3] == ["Node Name", "Raft State", "Membership"]
    assert row.split("\t")[:3] == ["node1", "leader", "voter"]
    # The indexes may move between two calls (the new queue's leader commits its first entries): compare
    # the node, its state and membership.
    code, out, _ = run("quorum_status", "tabs", "-n", node, "--quiet", cli=quorumq_queues)
    assert [line.split("\t")[:3] for line in out.splitlines()] == [
        header.split("\t")[:3],
        row.split("\t")[:3],
    ]
    code, out, _ = run("quorum_status", "tabs", "-n", node, "-s", cli=quorumq_queues)
    assert [line.split("\t")[:3] for line in out.splitlines()] == [row.split("\t")[:3]]
    code, out, _ = run("-t", "30", "quorum_status", "tabs", "-n", node, "-f", "json", cli=quorumq_queues)
    assert [member["node"] for member in json.loads(out)] == ["node1"]


def test_unreachable_nodes_exit_69_wherever_the_node_option_is(node: str) -> None:
    code, _, err = run("quorum_status", "q", "-n", "127.0.0.1:1", cli=quorumq_queues)
    assert code == 69 and "127.0.0.1:1" in err


def test_server_help_lists_every_setting_and_a_bad_start_names_what_is_wrong(tmp_path: Path) -> None:
    help_text = subprocess.run(
        [QUORUMQ, "server", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for doc in setting_docs():
        assert f"{doc.name}  {doc.variable} [{doc.default}]" in help_text
    env = {**os.environ, "QUORUMQ_TIK_MS": "50", "QUORUMQ_TICK_MS": "0"}
    flags = ["--node", "n1", "--data-dir", str(tmp_path), "--http", "127.0.0.1:1", "--raft", "127.0.0.1:2"]
    started = subprocess.run([QUORUMQ, "server", *flags], capture_output=True, text=True, env=env, timeout=60)
    assert started.returncode == 64
    assert "QUORUMQ_TIK_MS is not a quorumq setting and is ignored; did you mean QUORUMQ_TICK_MS?" in (
        started.stderr
    )
    assert "Error: tick_ms: must be >= 1, got 0" in started.stderr


def run_with_a_terminal_for_stderr(*args: str) -> tuple[int, str, str]:
    """Run `quorumq ARGS` with stdout a pipe and stderr a pseudo-terminal, as `quorumq ... > file` on a
    terminal; returns the exit code, stdout and what the terminal showed."""
    leader, follower = os.openpty()
    try:
        done = subprocess.run(
            [QUORUMQ, *args],
            stdout=subprocess.PIPE,
            stderr=follower,
            timeout=60,
            env={**os.environ, "COLUMNS": "100"},
        )
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end is closed: all is read
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
    return done.returncode, done.stdout.decode(), shown.decode(errors="replace")


def test_long_work_shows_progress_on_a_terminal_and_keeps_piped_output_clean(node: str) -> None:
    run("-n", node, "declare", "progress")
    code, out, shown = run_with_a_terminal_for_stderr("-n", node, "publish", "progress", "--count", "3000")
    assert code == 0 and out.startswith("published 3000 message(s)"), out
    assert "publishing to 'progress'" in shown and "3000/3000" in shown
    code, out, shown = run_with_a_terminal_for_stderr(
        "-n", node, "-f", "json", "consume", "progress", "--count", "3000"
    )
    assert (
        code == 0 and len(out.splitlines()) == 3000 and all(line.startswith("{") for line in out.splitlines())
    )
    assert "consuming from 'progress'" in shown and "3000/3000" in shown
