"""examples/flask_orders.py under gunicorn `--preload`: the master creates the SyncClient (and declares
the queue through it) before it forks the workers; each worker publishes through that client with its
own publisher id, so no worker's publish is taken for another's duplicate."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from cli.node_processes import ProcessCluster
from quorumq import SyncClient

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GUNICORN = Path(sys.executable).parent / "gunicorn"
WORKERS = 2
START_TIMEOUT_S = 60.0


@contextmanager
def gunicorn(nodes: list[str], log_path: Path) -> Iterator[str]:
    """The example served by gunicorn --preload with WORKERS workers on a socket this test listens on
    (so requests wait in its backlog until a worker is up); yields its base URL. Its log is printed
    when the block fails."""
    command = [GUNICORN, "--preload", f"--workers={WORKERS}", f"--chdir={EXAMPLES}"]
    env = {"PATH": str(GUNICORN.parent), "QUORUMQ_NODES": ",".join(nodes), "ORDERS_QUEUE": "orders"}
    with socket.create_server(("127.0.0.1", 0)) as listener, log_path.open("wb") as log:
        bind = f"--bind=fd://{listener.fileno()}"
        server = subprocess.Popen(
            [*command, bind, "flask_orders:app"],
            env=env,
            stdout=log,
            stderr=log,
            pass_fds=[listener.fileno()],
        )
        try:
            yield f"http://127.0.0.1:{listener.getsockname()[1]}"
        except BaseException:
            print(log_path.read_text(errors="replace"))  # shown with the failure
            raise
        finally:
            server.terminate()
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def _order(base: str, number: int) -> dict:
    body = json.dumps({"order": f"o-{number}"}).encode()
    order = urllib.request.Request(
        base + "/orders", data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(order, timeout=START_TIMEOUT_S) as answer:
        assert answer.status == 201
        return json.load(answer)


def test_gunicorn_preload_workers_publish_through_the_masters_client(
    one_node: ProcessCluster, tmp_path: Path
) -> None:
    answers: list[dict] = []
    with gunicorn(one_node.urls, tmp_path / "gunicorn.log") as base, ThreadPoolExecutor(8) as pool:
        # concurrent orders keep one worker busy while another accepts; stop once every worker answered
        deadline = time.monotonic() + START_TIMEOUT_S
        while len({answer["worker"] for answer in answers}) < WORKERS:
            assert time.monotonic() < deadline, f"not every worker answered: {answers}"
            answers += pool.map(lambda number: _order(base, number), range(len(answers), len(answers) + 16))

    publisher_of = {answer["worker"]: answer["publisher"] for answer in answers}
    assert all(publisher_of[answer["worker"]] == answer["publisher"] for answer in answers)
    assert len(set(publisher_of.values())) == WORKERS
    assert len({answer["id"] for answer in answers}) == len(answers)
    with SyncClient(one_node.urls) as client:
        assert client.queue("orders")["messages"] == len(answers)
