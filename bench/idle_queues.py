"""Cost that grows with queues, not with work (issue 40 item 6): many idle quorum queues on each broker.

    python -m bench.idle_queues [--queues 2000] [--large [10000]] [--broker quorumq --broker rabbitmq]
                                [--concurrency 32] [--deadline-seconds 300] [--settle-seconds 10]
                                [--idle-seconds 30] [--results FILE]

For each broker, on a fresh 3-node cluster on this machine: declare N quorum queues (the declare rate;
bench/many_queues.py says through which client, and how a phase ends at its deadline with the queues
it managed), publish one confirmed message to each, wait a settle
period, then sum the CPU of the three node processes (each with its children) over an idle window, in
cores (CPU seconds / wall seconds), with each node's peak RSS meanwhile. On quorumq, then stop one node
gracefully and time its start until every queue is online on it (bench/queues_online.py says what that
means). `--large` runs the same on quorumq alone with more queues (10,000 by default), after the rest.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, replace
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from bench.compare import CONSOLE_WIDTH, RESULTS_DIR, commit
from bench.drivers import Cluster
from bench.java_runner import JavaRunner
from bench.leader_changes import leader_changes
from bench.machine import describe_machine, rabbitmq_version
from bench.many_queues import Done, JavaManyQueues, ManyQueues, QuorumqManyQueues
from bench.queues_online import TIMEOUT_S as RESTART_TIMEOUT_S
from bench.queues_online import Restart, restart_until_online
from bench.quorumq_cluster import QuorumqCluster
from bench.rabbitmq_cluster import RabbitCluster
from bench.resources import UsageSampler, machine_busy_seconds
from bench.suite import BROKERS, running_cluster

NAMES = {"quorumq": "quorumq", "rabbitmq": "RabbitMQ"}
RESTARTED_NODE = 0
LARGE_QUEUES = 10_000
LARGE_IDLE_CORES = 0.2
ONLINE_WITHIN_S = 10.0
COLUMNS = (
    "broker",
    "queues",
    "declare queues/s",
    "publish msg/s",
    "idle cores (3 nodes)",
    "idle CPU s per node",
    "peak RSS MiB per node",
    "machine busy cores (all processes)",
    "leader changes in idle window",
    "load (1 min) at idle start",
    "restart: healthy s",
    "restart: all online s",
)
TARGET_COLUMNS = ("target (issue 40)", "measured", "met")


@dataclass(frozen=True)
class Settings:
    """How many queues, how many calls in flight making them, and how long each phase may last."""

    queues: int = 2000
    concurrency: int = 32
    deadline: float = 300.0  # per phase (declare, publish): past it no new queue is taken
    settle: float = 10.0
    idle: float = 30.0


@dataclass(frozen=True)
class IdleRun:
    """One broker asked for `requested` queues, each given one message: how many it took and how fast,
    and what its nodes cost doing nothing with them."""

    broker: str  # as --broker names it
    client: str
    requested: int
    declared: Done
    published: Done
    idle_seconds: float
    node_cpu_seconds: dict[str, float]
    node_rss_bytes: dict[str, int]
    machine_busy_cores: float
    leader_changes: int | None  # quorumq only (bench/leader_changes.py)
    load_at_idle: float
    restart: Restart | None

    @property
    def queues(self) -> int:
        """The queues declared (all that were asked for, unless the deadline passed or some failed)."""
        return len(self.declared.indexes)

    @property
    def idle_cores(self) -> float:
        """The three nodes' CPU over the idle window, in cores."""
        return sum(self.node_cpu_seconds.values()) / self.idle_seconds


def _many_queues(broker: str, cluster: Cluster, work_dir: Path, concurrency: int) -> ManyQueues:
    if broker == "quorumq":
        return QuorumqManyQueues(cluster.urls, concurrency)
    assert isinstance(cluster, RabbitCluster)
    runner = JavaRunner(cluster.urls, work_dir / "java-classes")
    many = JavaManyQueues(runner, concurrency)
    limits = sorted({node.open_files() for node in cluster.nodes})
    many.description += f"; RabbitMQ nodes' open-files limit {'/'.join(map(str, limits))}"
    return many


async def _fill(many: ManyQueues, settings: Settings) -> tuple[Done, Done]:
    declared = await many.declare(settings.queues, settings.deadline)
    return declared, await many.publish_each(declared.indexes, settings.deadline)


def measure(broker: str, settings: Settings, work_dir: Path) -> IdleRun:
    """A fresh cluster of `broker` under `work_dir`: declare and fill the queues, settle, measure the idle
    window and, on quorumq, restart a node until every queue is online on it."""
    with running_cluster(broker, work_dir) as cluster:
        many = _many_queues(broker, cluster, work_dir, settings.concurrency)
        declared, published = asyncio.run(_fill(many, settings))
        time.sleep(settings.settle)  # elections, flushes and snapshots after the declares and publishes
        load = os.getloadavg()[0]
        quorumq = isinstance(cluster, QuorumqCluster)
        changes = asyncio.run(leader_changes(cluster.urls)) if quorumq else 0
        started, busy = time.monotonic(), machine_busy_seconds()
        with UsageSampler(cluster.pids()) as sampler:
            time.sleep(settings.idle)
        idle_seconds = time.monotonic() - started
        busy_cores = (machine_busy_seconds() - busy) / idle_seconds
        changed = asyncio.run(leader_changes(cluster.urls)) - changes if quorumq else None
        restart = None
        if isinstance(cluster, QuorumqCluster):
            count, with_message = len(declared.indexes), len(published.indexes)
            restart = asyncio.run(restart_until_online(cluster, RESTARTED_NODE, count, with_message))
    return IdleRun(
        broker=broker,
        client=many.description,
        requested=settings.queues,
        declared=declared,
        published=published,
        idle_seconds=idle_seconds,
        node_cpu_seconds={name: usage.cpu_seconds for name, usage in sampler.usage.items()},
        node_rss_bytes=sampler.peak_rss,
        machine_busy_cores=busy_cores,
        leader_changes=changed,
        load_at_idle=load,
        restart=restart,
    )


def _seconds(value: float | None) -> str:
    return f"{value:.1f}" if value is not None else f"not reached in {RESTART_TIMEOUT_S:.0f}"


def _queues(run: IdleRun) -> str:
    """The queues declared, and how they fell short of those asked for, if they did."""
    text = f"{run.queues:,}"
    if run.queues < run.requested:
        text += f" of {run.requested:,}"
    if run.declared.errors:
        text += f", {run.declared.errors:,} declares failed"
    if len(run.published.indexes) < run.queues:
        text += f", {len(run.published.indexes):,} given a message"
    return text


def rows(runs: list[IdleRun]) -> list[list[str]]:
    """One row per run, in COLUMNS order."""
    return [
        [
            NAMES[run.broker],
            _queues(run),
            f"{run.declared.rate:,.1f}",
            f"{run.published.rate:,.0f}",
            f"{run.idle_cores:.3f}",
            " / ".join(f"{cpu:.2f}" for cpu in run.node_cpu_seconds.values()),
            " / ".join(f"{rss / 2**20:,.0f}" for rss in run.node_rss_bytes.values()),
            f"{run.machine_busy_cores:.2f}",
            "-" if run.leader_changes is None else f"{run.leader_changes:,}",
            f"{run.load_at_idle:.2f}",
            _seconds(run.restart.healthy_seconds) if run.restart else "-",
            _seconds(run.restart.online_seconds) if run.restart else "-",
        ]
        for run in runs
    ]


def _met(ok: bool) -> str:
    return "met" if ok else "not met"


def targets(runs: list[IdleRun]) -> list[list[str]]:
    """Issue 40's targets for idle queues, each with what this run measured and whether it is met; a
    target at N queues is not met by a run that could not declare all N."""
    ours = [run for run in runs if run.broker == "quorumq"]
    theirs = {run.requested: run for run in runs if run.broker == "rabbitmq"}
    table = []
    for run in ours:
        whole = run.queues == run.requested
        short = "" if whole else f" (quorumq declared {run.queues:,} of {run.requested:,})"
        if (anchor := theirs.get(run.requested)) is not None:
            table.append(
                [
                    f"idle CPU at {run.requested:,} queues <= RabbitMQ's in the same run",
                    f"{run.idle_cores:.3f} vs {anchor.idle_cores:.3f} cores{short}",
                    _met(whole and run.idle_cores <= anchor.idle_cores),
                ]
            )
            table.append(
                [
                    "declare rate >= RabbitMQ's",
                    f"{run.declared.rate:,.1f} vs {anchor.declared.rate:,.1f} queues/s{short}",
                    _met(whole and run.declared.rate >= anchor.declared.rate),
                ]
            )
    large = [run for run in ours if run.requested >= LARGE_QUEUES]
    table.append(
        [
            f"{LARGE_QUEUES:,} queues idle below {LARGE_IDLE_CORES} cores",
            ", ".join(f"{run.idle_cores:.3f} cores at {_queues(run)} queues" for run in large) or "not run",
            _met(all(r.queues == r.requested and r.idle_cores < LARGE_IDLE_CORES for r in large))
            if large
            else "-",
        ]
    )
    for run in ours:
        if run.restart is not None:
            online = run.restart.online_seconds
            table.append(
                [
                    f"a restarted node has every queue online in < {ONLINE_WITHIN_S:.0f} s",
                    f"{_seconds(online)} s at {run.queues:,} queues",
                    _met(online is not None and online < ONLINE_WITHIN_S),
                ]
            )
    return table


def _rich(title: str, columns: tuple[str, ...], body: list[list[str]]) -> Table:
    table = Table(*columns, title=title)
    for row in body:
        table.add_row(*row)
    return table


def _markdown_table(columns: tuple[str, ...], body: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
        *("| " + " | ".join(row) + " |" for row in body),
    ]


def markdown(runs: list[IdleRun], machine: dict[str, str], command: str, settings: Settings) -> str:
    """The results file: command, machine, clients, the runs and the targets."""
    lines = ["Command:", "", f"    {command}", "", "Machine:", ""]
    lines += [f"- {label}: {value}" for label, value in machine.items()]
    lines += ["", "Declared and published through:", ""]
    lines += [f"- {NAMES[run.broker]}, {run.queues:,} queues: {run.client}" for run in runs]
    lines += [
        "",
        textwrap.fill(
            f"Declaring and publishing each take no new queue after {settings.deadline:g} s. Idle: after "
            f"a settle of {settings.settle:g} s, the CPU of the three node processes (and their children) "
            "over the idle window, in cores; RSS is each node's peak during that window. Machine busy: "
            "every process's CPU over the window (/proc/stat); near the core count the nodes were starved, "
            "and their idle figure is a floor. Leader changes (quorumq): groups that started or stopped "
            "leading, summed over the nodes (/metrics); an idle cluster that keeps its leaders has none. "
            "Restart (quorumq): node1 stopped with SIGTERM (graceful) and started again, timed from "
            "starting its process until it answers /api/health (healthy), and until its own replica of "
            "every queue has a known leader and the message published before the restart (all online; "
            "bench/queues_online.py).",
            width=100,
        ),
        "",
        *_markdown_table(COLUMNS, rows(runs)),
        "",
        *_markdown_table(TARGET_COLUMNS, targets(runs)),
    ]
    return "\n".join(lines) + "\n"


@click.command()
@click.option("--queues", type=int, default=Settings.queues, show_default=True, help="queues on each broker")
@click.option(
    "--large",
    type=int,
    is_flag=False,
    flag_value=LARGE_QUEUES,
    default=None,
    help=f"also run quorumq alone with this many queues [default when given: {LARGE_QUEUES}]",
)
@click.option("--broker", "brokers", multiple=True, type=click.Choice(BROKERS), default=BROKERS)
@click.option(
    "--concurrency",
    type=int,
    default=Settings.concurrency,
    show_default=True,
    help="declares or publishes in flight",
)
@click.option(
    "--deadline-seconds",
    type=float,
    default=Settings.deadline,
    show_default=True,
    help="per phase (declare, publish): past it no new queue is taken, and the run goes on with those done",
)
@click.option("--settle-seconds", type=float, default=Settings.settle, show_default=True)
@click.option("--idle-seconds", type=float, default=Settings.idle, show_default=True)
@click.option(
    "--results",
    type=click.Path(path_type=Path),
    default=None,
    help="results file [default: bench/results/<date>-<commit>-idle.md]",
)
def main(
    queues: int,
    large: int | None,
    brokers: tuple[str, ...],
    concurrency: int,
    deadline_seconds: float,
    settle_seconds: float,
    idle_seconds: float,
    results: Path | None,
) -> None:
    """Measure the declare rate and the idle cost of many quorum queues on each broker."""
    console = Console(width=CONSOLE_WIDTH)
    machine = describe_machine()  # the load average before the runs
    settings = Settings(queues, concurrency, deadline_seconds, settle_seconds, idle_seconds)
    plan = [(broker, settings) for broker in brokers]
    if large:
        plan.append(("quorumq", replace(settings, queues=large)))
    runs = []
    with tempfile.TemporaryDirectory(prefix="quorumq-idle-") as work_dir:
        Path(work_dir).chmod(0o755)  # RabbitMQ nodes run as the rabbitmq user
        for broker, run_settings in plan:
            console.print(f"[bold]{broker}[/]: {run_settings.queues:,} queues on a fresh 3-node cluster")
            runs.append(measure(broker, run_settings, Path(work_dir) / f"{broker}-{run_settings.queues}"))
    console.print(_rich("idle quorum queues (3 nodes each, one machine)", COLUMNS, rows(runs)))
    console.print(_rich("issue 40's targets", TARGET_COLUMNS, targets(runs)))
    if "rabbitmq" in brokers:
        machine["RabbitMQ (Debian package)"] = rabbitmq_version()  # installed by the run when it was missing
    command = " ".join(["python -m bench.idle_queues", shlex.join(sys.argv[1:])]).rstrip()
    results = results or RESULTS_DIR / f"{time.strftime('%Y-%m-%d')}-{commit()}-idle.md"
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text("# Idle queues\n\n" + markdown(runs, machine, command, settings))
    console.print(f"written to {results}")


if __name__ == "__main__":
    main()
