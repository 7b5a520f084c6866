"""Flow control holds a queue leader's memory while publishers keep no window (issue 40, slice 3): four
clients each put 500 publishes of 64 KiB in flight at once on their streams (125 MiB, twice the default
bound) against a 3-node cluster whose leaders hold at most 4 MiB of proposals not yet applied. The
leader refuses what is beyond its bound with an `error` 503 `overloaded` frame, the clients retry after
its `retry_after` until every publish is confirmed, and every confirmed message is then consumed
exactly once.

The stated bound: the leader's peak resident memory during the load stays under 256 MiB. Measured
here it is about 200 MiB, and about 365 MiB under the same load with the default 64 MiB bound.
Each client keeps fewer publishes in flight than its dedup window (1024 seqs): a publish held back
while 1024 later ones of its publisher were confirmed could only be refused `seq_too_old`."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from node_helpers import running_cluster

from cli.node_processes import ProcessCluster
from quorumq import Client

MIB = 1024 * 1024
PUBLISHERS = 4
IN_FLIGHT = 500  # per publisher, below its dedup window
BODY_BYTES = 64 * 1024
PEAK_RSS_BOUND = 256 * MIB


@pytest.fixture
def bounded_cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ProcessCluster]:
    """Three nodes whose leaders hold at most 4 MiB of proposals not yet applied per queue."""
    yield from running_cluster(tmp_path, request, 3, {"QUORUMQ_MAX_UNAPPLIED_PROPOSAL_BYTES": str(4 * MIB)})


def _reset_peak_rss(pid: int) -> None:
    """Start the process's peak resident memory (VmHWM) again from its present one."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def _peak_rss(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"^VmHWM:\s+(\d+) kB$", status, re.M)
    assert found is not None, status
    return int(found.group(1)) * 1024


def _body(publisher: int, index: int) -> bytes:
    return f"{publisher}-{index}-".encode().ljust(BODY_BYTES, b".")


async def _publish_without_a_window(url: str, publisher: int) -> dict[bytes, int]:
    """Every publish of one client at once; each body with the id its confirm gave."""
    async with Client([url], timeout=120.0) as client:
        bodies = [_body(publisher, index) for index in range(IN_FLIGHT)]
        confirms = await asyncio.gather(*(client.publish("flood", [body]) for body in bodies))
    return {body: ids[0] for body, ids in zip(bodies, confirms, strict=True)}


async def test_a_leader_under_publishers_without_a_window_stays_under_its_memory_bound(
    bounded_cluster: ProcessCluster,
) -> None:
    async with Client(bounded_cluster.urls, timeout=30.0) as client:
        await client.declare("flood", {"x-quorum-initial-group-size": 3})
        leader = bounded_cluster.node((await client.queue("flood"))["leader"])
    assert leader.process is not None
    _reset_peak_rss(leader.process.pid)
    confirmed: dict[bytes, int] = {}
    for published in await asyncio.gather(
        *(_publish_without_a_window(leader.url, p) for p in range(PUBLISHERS))
    ):
        confirmed |= published
    peak = _peak_rss(leader.process.pid)
    async with Client([leader.url], timeout=30.0) as client:
        refused = re.search(
            r'^quorumq_publishes_overloaded_total\{queue="flood"\} (\S+)$', await client.metrics_text(), re.M
        )
        got = []
        while batch := await client.get("flood", count=200, ack="auto"):
            got += batch
    assert refused is not None and float(refused.group(1)) > 0, "the load met the bound"
    assert peak < PEAK_RSS_BOUND, f"the leader's resident memory peaked at {peak / MIB:.0f} MiB"
    assert len(confirmed) == PUBLISHERS * IN_FLIGHT
    assert sorted((m.body, m.id) for m in got) == sorted(confirmed.items())
