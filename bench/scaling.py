"""Does throughput grow with cores? Workload (d) on quorumq with the node processes pinned by `taskset`
to 1 core, then to 2, with one node per core on each host (decision 0015).

    python -m bench.scaling [--duration 10] [--queues 50] [--results FILE]

Three hosts are played by the loopback addresses 127.0.0.1-3 on this one machine, so the pinned cores
are shared by all three: this measures a whole cluster against the cores it has, not one host of a
cluster whose hosts each have that many. Runs, each on a fresh cluster:
1 core with 1 node per host; 2 cores with 1 node per host (one process per node, as before); 2 cores with
2 nodes per host. The client runs unpinned in this process, so with 2 cores it competes with the nodes
for both: the figures understate the nodes' scaling on a machine with cores to spare for clients.
"""

from __future__ import annotations

import asyncio
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from bench.asyncio_runner import AsyncioRunner
from bench.compare import RESULTS_DIR, commit
from bench.driver_quorumq import QuorumqDriver
from bench.machine import describe_machine
from bench.quorumq_cluster import QuorumqCluster
from bench.resources import UsageSampler
from bench.specs import Flow
from bench.suite import KIB

HOSTS = 3
RUNS = ((1, 1), (2, 1), (2, 2))  # (cores, nodes per host)


@dataclass(frozen=True)
class ScalingRun:
    """Workload (d) on one configuration: its rate, and the CPU its nodes used over `seconds`."""

    cores: int
    nodes_per_host: int
    rate: float
    node_cpu_seconds: float
    seconds: float


async def _flow(urls: list[str], duration: float, queues: int, in_flight: int) -> float:
    runner = AsyncioRunner(QuorumqDriver(urls), "Python client")
    result = await runner.run(Flow(KIB, duration, None, queues, in_flight, in_flight))
    return result.rate


def measure(
    work_dir: Path, cores: int, per_host: int, duration: float, queues: int, in_flight: int
) -> ScalingRun:
    """One fresh cluster of `per_host` nodes on each of three hosts, pinned to the first `cores` CPUs."""
    pin = ["taskset", "-c", ",".join(str(cpu) for cpu in range(cores))]
    data_dir = work_dir / f"{cores}-cores-{per_host}-per-host"
    cluster = QuorumqCluster.start(data_dir, HOSTS * per_host, hosts=HOSTS, prefix=pin)
    try:
        started = time.monotonic()
        with UsageSampler(cluster.pids()) as sampler:
            rate = asyncio.run(_flow(cluster.urls, duration, queues, in_flight))
        seconds = time.monotonic() - started  # the sampled span: the queues' setup and the run
        cpu = sum(usage.cpu_seconds for usage in sampler.usage.values())
    finally:
        cluster.stop()
    return ScalingRun(cores, per_host, rate, cpu, seconds)


def markdown(runs: list[ScalingRun], machine: dict[str, str], command: str) -> str:
    """The runs as a Markdown table, each rate as a ratio to the 1-core run."""
    base = runs[0].rate or float("nan")
    lines = [
        "| cores | nodes per host | msg/s | x 1 core | node CPU s per s |",
        "|---|---|---|---|---|",
        *(
            f"| {r.cores} | {r.nodes_per_host} | {r.rate:,.0f} | {r.rate / base:.2f} | "
            f"{r.node_cpu_seconds / r.seconds:.2f} |"
            for r in runs
        ),
    ]
    facts = [f"- {label}: {value}" for label, value in machine.items()]
    return "\n".join([f"`{command}`", "", *facts, "", *lines, ""])


@click.command()
@click.option("--duration", type=float, default=10.0, show_default=True, help="seconds per run")
@click.option("--queues", type=int, default=50, show_default=True)
@click.option("--in-flight", type=int, default=100, show_default=True, help="unconfirmed per queue")
@click.option("--results", type=click.Path(path_type=Path), default=None, help="[default: bench/results/]")
def main(duration: float, queues: int, in_flight: int, results: Path | None) -> None:
    """Measure workload (d) at 1 and 2 cores and print the scaling ratios."""
    console = Console()
    machine = describe_machine()  # the load average before the runs
    runs = []
    with tempfile.TemporaryDirectory(prefix="quorumq-scaling-") as work_dir:
        for cores, per_host in RUNS:
            console.print(f"{cores} core(s), {per_host} node(s) per host x {HOSTS} hosts")
            runs.append(measure(Path(work_dir), cores, per_host, duration, queues, in_flight))
    table = Table("cores", "nodes per host", "msg/s", "x 1 core", "node CPU s per s")
    for run in runs:
        table.add_row(
            str(run.cores),
            str(run.nodes_per_host),
            f"{run.rate:,.0f}",
            f"{run.rate / (runs[0].rate or float('nan')):.2f}",
            f"{run.node_cpu_seconds / run.seconds:.2f}",
        )
    console.print(table)
    command = "python -m bench.scaling " + shlex.join(sys.argv[1:])
    results = results or RESULTS_DIR / f"{time.strftime('%Y-%m-%d')}-{commit()}-scaling.md"
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text("# Scaling with cores\n\n" + markdown(runs, machine, command))
    console.print(f"written to {results}")


if __name__ == "__main__":
    main()
