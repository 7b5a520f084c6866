"""Profile one quorumq workload from both ends: py-spy on the queue's leader node, pyinstrument in the client.

    python -m bench.profile --workload a-1k [--duration 10] [--out /tmp/quorumq-profile]

Prints the leader's CPU per message over the run (py-spy's sampling included), the functions with the
largest share of samples on the node (own time and inclusive time, from py-spy's collapsed stacks,
threads holding the GIL or not) and pyinstrument's client-side call tree.
"""

from __future__ import annotations

import asyncio
import collections
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import click
from pyinstrument import Profiler

from bench.asyncio_runner import AsyncioRunner
from bench.driver_quorumq import QuorumqDriver
from bench.quorumq_cluster import QuorumqCluster
from bench.resources import cpu_seconds
from bench.suite import WORKLOAD_KEYS, Options, workloads

TOP = 15
SAMPLE_RATE_HZ = 200
PROJECT_PACKAGES = ("api/", "cluster/", "raft_log/", "queue_state/", "metadata_state/")


def frame_name(frame: str) -> str:
    """`function (path/to/file.py:line)` from py-spy's raw frame, shortened to the repository path."""
    function, _, where = frame.partition(" (")
    path = where.rsplit(":", 1)[0]
    for marker in ("/site-packages/", "/work/main/", "/lib/python3.11/"):
        if marker in path:
            path = path.split(marker, 1)[1]
    return f"{function} ({path})"


def hotspots(collapsed: str, top: int = TOP) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """(own-time, inclusive-time) shares of the busiest functions from py-spy's raw (collapsed) output.

    Inclusive time counts only the project's own functions (api, cluster, raft_log, queue_state,
    metadata_state)."""
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in collapsed.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        frames = [frame_name(f) for f in stack.split(";")[1:]]  # the first element names the thread
        if not frames:
            continue
        total += count
        own[frames[-1]] += count
        for name in set(frames):
            if name.rsplit(" (", 1)[1].startswith(PROJECT_PACKAGES):
                inclusive[name] += count
    if total == 0:
        return [], []
    return (
        [(name, n / total) for name, n in own.most_common(top)],
        [(name, n / total) for name, n in inclusive.most_common(top)],
    )


def _print_shares(title: str, shares: list[tuple[str, float]]) -> None:
    click.echo(title)
    for name, share in shares:
        click.echo(f"  {share:6.1%}  {name}")


@click.command()
@click.option("--workload", "key", default="a-1k", show_default=True, help=" ".join(WORKLOAD_KEYS))
@click.option("--duration", type=float, default=10.0, show_default=True)
@click.option("--consume-count", type=int, default=50_000, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=None, help="keep raw profiles here")
def main(key: str, duration: float, consume_count: int, out: Path | None) -> None:
    """Run one workload against a fresh quorumq cluster with the leader node under py-spy."""
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    options = Options(duration=duration, consume_count=consume_count, backlog=0, workloads=(key,))
    [shape] = workloads(options)
    out = out or Path(tempfile.mkdtemp(prefix="quorumq-profile-"))
    out.mkdir(parents=True, exist_ok=True)
    raw = out / f"node-{key}.txt"
    with tempfile.TemporaryDirectory(prefix="quorumq-profile-cluster-") as data_dir:
        cluster = QuorumqCluster.start(Path(data_dir))
        try:
            runner = AsyncioRunner(QuorumqDriver(cluster.urls), "Python client")
            asyncio.run(runner.setup(shape.spec))  # not profiled (e.g. the prefill before a drain)
            leader_pid = cluster.pids()["node1"]  # queues are declared through node1, which leads them
            record = [py_spy, "record", "--pid", str(leader_pid), "--rate", str(SAMPLE_RATE_HZ)]
            record += ["--format", "raw", "--output", str(raw), "--nonblocking", "--threads"]
            spy = subprocess.Popen(record, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            profiler = Profiler(async_mode="disabled")
            leader_cpu = cpu_seconds(leader_pid)
            profiler.start()
            result = asyncio.run(runner.run(shape.spec))
            profiler.stop()
            leader_cpu = cpu_seconds(leader_pid) - leader_cpu
            spy.send_signal(signal.SIGINT)
            spy.wait()
        finally:
            cluster.stop()
    click.echo(f"{shape.label}: {result.rate:,.0f} msg/s")
    per_message = leader_cpu / result.messages * 1e6 if result.messages else 0.0
    click.echo(f"leader CPU: {leader_cpu:.2f} s, {per_message:.0f} µs per message")
    own, inclusive = hotspots(raw.read_text())
    _print_shares(f"node (py-spy, leader node1, {raw}): own time", own)
    _print_shares("node: inclusive time of project functions", inclusive)
    client_text = profiler.output_text(unicode=False, color=False, show_all=False)
    (out / f"client-{key}.txt").write_text(client_text)
    click.echo(f"client (pyinstrument, {out / f'client-{key}.txt'}):")
    click.echo(client_text)


if __name__ == "__main__":
    main()
