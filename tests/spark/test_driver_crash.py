"""The driver (Python and its JVM) SIGKILLed mid-batch: the restarted pipeline has no gaps or duplicates."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from spark_helpers import publish_orders, queue_stats, wait_for

from cli.node_processes import ProcessCluster

PIPELINE = Path(__file__).resolve().parents[2] / "examples" / "spark_pipeline.py"


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
    driver = _pipeline(cluster, tmp_path, "0.2", "--max-records", "100")
    try:
        wait_for(lambda: _mid_batch(tmp_path / "checkpoint"), 120, "a batch in flight")
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
    assert queue_stats(cluster.urls, "orders")["messages"] > 0, "killed too late to test anything"
    restarted = _pipeline(cluster, tmp_path, "available-now")
    assert restarted.wait(timeout=180) == 0, (tmp_path / "driver-available-now.log").read_text()[-3000:]
    totals = spark.read.parquet(str(tmp_path / "out")).select("id", "order", "total").collect()
    assert sorted(r.id for r in totals) == sorted(ids)
    assert {r.order: r.total for r in totals}["o-7"] == 1.5 * 3
    assert queue_stats(cluster.urls, "orders")["messages"] == 0
    assert queue_stats(cluster.urls, "order-totals")["messages"] == len(ids)
