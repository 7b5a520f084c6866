"""Celery on quorumq through the AMQP listener, changing only the broker URL: a worker runs tasks with
late acks, and a task whose worker is killed with SIGKILL while running it is run again by the next
worker, as on RabbitMQ."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.eventually import eventually_sync

from cli.node_processes import HARNESS_PASSWORD, HARNESS_USER, NodeProcess
from quorumq import SyncClient

pytestmark = pytest.mark.process

HERE = Path(__file__).parent
QUEUE = "celery-tasks"


def environment(amqp_port: int) -> dict[str, str]:
    url = f"amqp://{HARNESS_USER}:{HARNESS_PASSWORD}@127.0.0.1:{amqp_port}//"
    paths = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "QUORUMQ_CELERY_BROKER": url, "PYTHONPATH": paths}


def worker(amqp_port: int, log: Path) -> subprocess.Popen[bytes]:
    """A Celery worker running one task at a time, in this process group's reach."""
    argv = [sys.executable, "-m", "celery", "-A", "celery_app", "worker", "--pool", "solo"]
    argv += ["--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "info"]
    with log.open("ab") as out:
        return subprocess.Popen(argv, env=environment(amqp_port), stdout=out, stderr=subprocess.STDOUT)


@pytest.fixture
def workers(amqp_port: int, tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    try:
        yield started
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
                process.wait()


def send(amqp_port: int, path: Path, first_run_seconds: float) -> None:
    """Send one `record` task from a process of its own (as an application would)."""
    code = f"from celery_app import record; record.delay({str(path)!r}, {first_run_seconds})"
    subprocess.run([sys.executable, "-c", code], env=environment(amqp_port), check=True, timeout=60)


def runs(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def settled(node: NodeProcess) -> bool:
    """Whether the tasks' queue holds nothing, ready or unacked."""
    with SyncClient([node.url]) as client:
        return client.queue(QUEUE)["messages"] == 0


def test_a_task_runs_and_a_killed_workers_task_runs_again(
    amqp_node: NodeProcess, amqp_port: int, tmp_path: Path, workers: list[subprocess.Popen[bytes]]
) -> None:
    log = tmp_path / "workers.log"
    done = tmp_path / "done.txt"
    send(amqp_port, done, 0.0)
    workers.append(worker(amqp_port, log))
    eventually_sync(lambda: len(runs(done)) == 1, "the first task run", timeout=60)
    # The solo pool acks a finished task on its loop's next turn: a task that starts first (and sleeps)
    # would hold that ack back, and the kill below would then return the first task too (also on
    # RabbitMQ). So the next task goes once this one's ack is in.
    eventually_sync(lambda: settled(amqp_node), "the first task acked", timeout=60)

    killed = tmp_path / "killed.txt"
    send(amqp_port, killed, 120.0)  # its first run outlasts the test: only a second run finishes
    eventually_sync(lambda: len(runs(killed)) == 1, "the long task started", timeout=60)
    first = workers[0]
    first.send_signal(signal.SIGKILL)
    first.wait()
    workers.append(worker(amqp_port, log))
    eventually_sync(lambda: len(runs(killed)) == 2, "the task run again by the next worker", timeout=60)
    assert runs(killed)[0] == str(first.pid) and runs(killed)[1] == str(workers[1].pid)
    assert len(runs(done)) == 1  # the finished task was acked: never run again
