"""Real node processes for the membership tests; node logs are printed when a test fails."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from membership_helpers import AUTO_REMOVE, FAST_RECONCILE

from cli.node_processes import ProcessCluster


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ProcessCluster]:
    """A fresh 3-node cluster for one test (its node logs are printed when the test fails)."""
    running = ProcessCluster.start(tmp_path, 3, env=FAST_RECONCILE)
    try:
        yield running
    except BaseException:
        print(running.log_tails())
        raise
    finally:
        running.stop()


@pytest.fixture(scope="module")
def five(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    """One 5-node cluster shared by a module (each test uses its own queues)."""
    running = ProcessCluster.start(tmp_path_factory.mktemp("five"), 5, env=FAST_RECONCILE)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    """A 3-node cluster that forgets forgotten members' replicas by itself (auto_remove)."""
    running = ProcessCluster.start(tmp_path_factory.mktemp("three"), 3, env=AUTO_REMOVE)
    yield running
    running.stop()


@pytest.fixture(autouse=True)
def print_logs_on_failure(request: pytest.FixtureRequest) -> Iterator[None]:
    """Print the tails of the module cluster's node logs when a test fails."""
    yield
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        for name in ("five", "three"):
            if name in request.fixturenames:
                print(request.getfixturevalue(name).log_tails())


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):  # type: ignore[no-untyped-def]
    """Keep each phase's report on the item so fixtures can see whether the test failed."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report
