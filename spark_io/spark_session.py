"""Making format("quorumq") available in a SparkSession."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from spark_io.datasource import QuorumqDataSource


def register(spark: SparkSession) -> SparkSession:
    """Register format("quorumq") in `spark` (each session needs it once)."""
    spark.dataSource.register(QuorumqDataSource)
    return spark


def local_session(app_name: str, master: str = "local[2]", *, ui: bool = False) -> SparkSession:
    """A small session whose Python workers run this interpreter, with format("quorumq") registered:
    in this process by default, or with a cluster's `master` URL (e.g. `spark://host:7077`, a standalone
    cluster) on its executors; `ui` turns the Spark UI on (port 4040, or the next free one)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", str(ui).lower())
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    return register(spark)
