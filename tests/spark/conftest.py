"""Fixtures for the Spark tests: one real 3-node cluster per module and one local[2] Spark session."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.node_processes import ProcessCluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    """A 3-node cluster shared by a module's tests (each test uses its own queues)."""
    running = ProcessCluster.start(tmp_path_factory.mktemp("cluster"))
    yield running
    running.stop()


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """A local[2] SparkSession whose Python workers run this interpreter."""
    pyspark_sql = pytest.importorskip("pyspark.sql")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from spark_io.spark_session import local_session

    session = local_session("quorumq-tests")
    assert isinstance(session, pyspark_sql.SparkSession)
    yield session
    session.stop()


@pytest.fixture
def checkpoint(tmp_path: Path) -> str:
    return str(tmp_path / "checkpoint")
