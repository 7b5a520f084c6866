"""The connector beyond one JVM: the pipeline (examples/spark_pipeline.py) on a Spark standalone cluster
(a master and two workers, executors in JVMs of their own), one executor SIGKILLed while it runs a task.

Spark runs the lost tasks again on an executor still alive (or the one its worker starts in its place):
the source reads the same log ranges again and the sink publishes under the same publisher ids, so the
parquet output and the results queue hold every order exactly once, and the orders queue ends empty.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import publish_orders, queue_stats
from support.eventually import eventually_sync

from bench.spark_standalone import StandaloneCluster
from cli.node_processes import ProcessCluster

PIPELINE = Path(__file__).resolve().parents[2] / "examples" / "spark_pipeline.py"
ORDERS = 6000
UI = re.compile(r"^Spark UI at (http://\S+)$", re.MULTILINE)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    running = StandaloneCluster.start(tmp_path_factory.mktemp("spark-standalone"), workers=2)
    yield running
    running.stop()


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return json.load(answer)


def _executors(ui: str, which: str = "executors") -> tuple[str, list[dict]]:
    """The application's id and its executors (`allexecutors` also lists the removed ones), but the driver."""
    app = _get(f"{ui}/api/v1/applications")[0]["id"]
    return app, [e for e in _get(f"{ui}/api/v1/applications/{app}/{which}") if e["id"] != "driver"]


def _busy_executor(ui: str) -> tuple[str, str] | None:
    """(application id, executor id) of an executor running a task now, once there are two executors."""
    app, executors = _executors(ui)
    busy = [e["id"] for e in executors if e["activeTasks"] > 0]
    return (app, busy[0]) if len(executors) == 2 and busy else None


def _executor_pid(app: str, executor: str) -> int:
    """The process of executor `executor` of application `app` (a CoarseGrainedExecutorBackend JVM)."""
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in argv and app.encode() in argv:
            at = argv.index(b"--executor-id")
            if argv[at + 1] == executor.encode():
                return int(entry.name)
    raise LookupError(f"no process for executor {executor} of {app}")


@pytest.mark.faults
@pytest.mark.timeout(600)
def test_an_executor_killed_mid_task_leaves_every_order_once_in_parquet_and_the_results_queue(
    spark, cluster: ProcessCluster, standalone: StandaloneCluster, tmp_path: Path
) -> None:
    ids = publish_orders(cluster.urls, "orders", ORDERS)
    publish_orders(cluster.urls, "order-totals", 0)
    log = tmp_path / "driver.log"
    command = [
        sys.executable, str(PIPELINE), "--master", standalone.master_url, "--nodes", ",".join(cluster.urls),
        "--checkpoint", str(tmp_path / "checkpoint"), "--output", str(tmp_path / "out"),
        "--trigger", "available-now", "--max-messages", "500",
    ]  # fmt: skip
    driver = subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        ui = eventually_sync(lambda: UI.search(log.read_text()), "the driver's UI address", timeout=120)[1]
        app, victim = eventually_sync(
            lambda: "batch 0:" in log.read_text() and _busy_executor(ui),
            "an executor running a task after the first batch",
            timeout=180,
            interval=0.05,
        )
        os.kill(_executor_pid(app, victim), signal.SIGKILL)
        removed = eventually_sync(
            lambda: [e for e in _executors(ui, "allexecutors")[1] if e["id"] == victim and not e["isActive"]],
            "Spark to see the executor lost",
            timeout=120,
        )
        assert queue_stats(cluster.urls, "orders")["messages"] > 0, "killed too late to test anything"
        assert driver.wait(timeout=300) == 0, log.read_text()[-4000:]
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
    assert removed[0]["removeReason"], removed
    assert "ExecutorLostFailure" in log.read_text(), "no task was lost with the executor"
    totals = spark.read.parquet(str(tmp_path / "out")).select("id", "order").collect()
    assert sorted(r.id for r in totals) == sorted(ids)
    assert len({r.order for r in totals}) == ORDERS
    assert queue_stats(cluster.urls, "orders")["messages"] == 0
    assert queue_stats(cluster.urls, "order-totals")["messages"] == ORDERS
