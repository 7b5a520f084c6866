"""The driver (Python and its JVM) SIGKILLed mid-batch: the restarted pipeline has no gaps or duplicates.

The pipeline (examples/spark_pipeline.py) logs in as a user who may only read `orders` and write
`order-totals`, with its password in a file, and prints the Spark UI's address and each batch's progress.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from spark_helpers import publish_orders, queue_stats, run
from support.eventually import eventually_sync

from cli.node_processes import ProcessCluster

PIPELINE = Path(__file__).resolve().parents[2] / "examples" / "spark_pipeline.py"
USER, PASSWORD = "orders-pipeline", "pipeline-pass-31c"
PROGRESS = re.compile(r"^batch (\d+): (\d+) orders, backlog (\d+)$", re.MULTILINE)


def _pipeline(cluster: ProcessCluster, tmp_path: Path, trigger: str, *extra: str) -> subprocess.Popen:
    command = [
        sys.executable,
        str(PIPELINE),
        "--nodes",
        ",".join(cluster.urls),
        "--checkpoint",
        str(tmp_path / "checkpoint"),
        "--output",
        str(tmp_path / "out"),
        "--trigger",
        trigger,
        "--user",
        USER,
        "--password-file",
        str(tmp_path / "password"),
        *extra,
    ]
    log = (tmp_path / f"driver-{trigger}.log").open("w")
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _mid_batch(checkpoint: Path) -> bool:
    """True while a batch after the first is planned (offsets/N) but not yet committed (commits/N)."""
    planned = {int(p.name) for p in (checkpoint / "offsets").glob("[0-9]*")}
    committed = {int(p.name) for p in (checkpoint / "commits").glob("[0-9]*")}
    return bool(committed) and bool(planned - committed)


@pytest.mark.faults
@pytest.mark.timeout(300)
def test_a_driver_killed_mid_batch_restarts_with_no_gap_and_no_duplicate(
    spark, cluster: ProcessCluster, tmp_path: Path
) -> None:
    ids = publish_orders(cluster.urls, "orders", 800)
    publish_orders(cluster.urls, "order-totals", 0)

    async def add_user(client) -> None:  # type: ignore[no-untyped-def]
        await client.put_user(USER, PASSWORD)
        await client.set_permissions(USER, read="^orders$", write="^order-totals$")

    run(cluster.urls, add_user)
    (tmp_path / "password").write_text(PASSWORD + "\n")
    driver = _pipeline(cluster, tmp_path, "0.2", "--max-messages", "100")
    first_log = tmp_path / "driver-0.2.log"
    try:
        eventually_sync(
            lambda: _mid_batch(tmp_path / "checkpoint") and "batch 0:" in first_log.read_text(),
            "a batch in flight after the first batch's progress line",
            timeout=120,
            interval=0.2,
        )
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
    assert queue_stats(cluster.urls, "orders")["messages"] > 0, "killed too late to test anything"
    printed = first_log.read_text()
    assert "Spark UI at http://" in printed
    progress = [tuple(map(int, line)) for line in PROGRESS.findall(printed)]
    assert progress[0] == (0, 100, 700), printed[-3000:]
    restarted = _pipeline(cluster, tmp_path, "available-now")
    restarted_log = tmp_path / "driver-available-now.log"
    assert restarted.wait(timeout=180) == 0, restarted_log.read_text()[-3000:]
    assert "raised by the Python Proxy" not in restarted_log.read_text(), "the progress printer failed"
    totals = spark.read.parquet(str(tmp_path / "out")).select("id", "order", "total").collect()
    assert sorted(r.id for r in totals) == sorted(ids)
    assert {r.order: r.total for r in totals}["o-7"] == 1.5 * 3
    assert queue_stats(cluster.urls, "orders")["messages"] == 0
    assert queue_stats(cluster.urls, "order-totals")["messages"] == len(ids)
