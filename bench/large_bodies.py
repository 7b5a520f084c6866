"""A consumer of large messages (issue 40 item 5): does a node's memory grow by about one body per
delivery in flight, or by a multiple of it (bodies copied per delivery or per replica)?

    python -m bench.large_bodies [--messages 64] [--body-mib 16] [--prefetch 8 --prefetch 32]
                                 [--results FILE]

On a fresh 3-node quorumq cluster (bench/quorumq_cluster.py), for each prefetch: declare a queue afresh
through node1 (its leader), publish `messages` bodies of `body-mib` MiB, each confirmed, one per publish,
let the nodes settle, then consume them all through the Python client (a subscription on the stream,
each delivered batch acked as it arrives) while every node's RSS is sampled every 0.1 s. The figure is
each node's peak RSS during the consume over its RSS just before it, against prefetch x body.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from bench.compare import CONSOLE_WIDTH, RESULTS_DIR, commit
from bench.driver_quorumq import UNRESPONSIVE_AFTER_S, QuorumqDriver
from bench.machine import describe_machine
from bench.quorumq_cluster import QuorumqCluster
from bench.resources import UsageSampler, own_rss_bytes, rss_bytes
from quorumq import Client

MIB = 2**20
QUEUE = "bench-large"
PUBLISH_WINDOW = 4  # publishes (one body each) in flight
SETTLE_S = 3.0  # a node gives its free heap back after a second of quiet (cluster/queues/allocator.py)
TIMEOUT_S = 120.0
COLUMNS = (
    "prefetch",
    "messages x body",
    "fill s",
    "consume s",
    "leader",
    "RSS MiB per node: empty -> filled (fill peak)",
    "consume: peak MiB per node (over filled)",
    "leader's growth / (prefetch x body)",
    "client RSS growth MiB",
    "redeliveries",
)


@dataclass(frozen=True)
class Settings:
    """How many bodies of what size, and the prefetches to consume them with."""

    messages: int = 64
    body_size: int = 16 * MIB
    prefetches: tuple[int, ...] = (8, 32)


@dataclass(frozen=True)
class ConsumeRun:
    """One fill and consume: every node's RSS (bytes) empty, at the fill's peak, filled and settled
    (the consume's baseline) and at the consume's peak; the client's own RSS before and at its peak; and
    how many deliveries were redeliveries."""

    prefetch: int
    messages: int
    body_size: int
    leader: str
    fill_seconds: float
    consume_seconds: float
    rss_empty: dict[str, int]
    fill_peak: dict[str, int]
    rss_filled: dict[str, int]
    consume_peak: dict[str, int]
    client_filled: int
    client_peak: int
    redelivered: int

    def growth(self, node: str) -> int:
        """How far `node`'s RSS rose above its baseline while the queue was consumed."""
        return self.consume_peak[node] - self.rss_filled[node]

    @property
    def in_flight_bytes(self) -> int:
        """What the deliveries the consumer may hold unacked carry: prefetch x body."""
        return self.prefetch * self.body_size


def _rss(cluster: QuorumqCluster) -> dict[str, int]:
    return {name: rss_bytes(pid) for name, pid in cluster.pids().items()}


def _client(cluster: QuorumqCluster) -> Client:
    return Client(cluster.urls, timeout=TIMEOUT_S, unresponsive_after=UNRESPONSIVE_AFTER_S)


async def _fill(client: Client, messages: int, body_size: int) -> None:
    async with client.publisher(QUEUE, window=PUBLISH_WINDOW, batch=1) as publisher:
        confirms = [await publisher.send(os.urandom(body_size)) for _ in range(messages)]
    await asyncio.gather(*confirms)


async def _consume(client: Client, prefetch: int, messages: int, body_size: int) -> int:
    """Take every message through one subscription, acking each batch as it arrives; how many deliveries
    were redeliveries (none unless the consumer lost its stream or its leader)."""
    received: set[int] = set()
    redelivered = 0
    acking: set[asyncio.Task[None]] = set()
    async with client.subscribe(QUEUE, prefetch=prefetch) as subscription:
        async for batch in subscription.batches():
            for delivery in batch:
                if len(delivery.body) != body_size:
                    raise RuntimeError(f"a body of {len(delivery.body)} bytes, not {body_size}")
                redelivered += delivery.redelivered or delivery.id in received
                received.add(delivery.id)
            ack = asyncio.create_task(subscription.ack([delivery.id for delivery in batch]))
            acking.add(ack)
            ack.add_done_callback(acking.discard)
            del batch  # hold no body past its batch
            if len(received) >= messages:
                break
        await asyncio.gather(*acking)
    return redelivered


async def measure(cluster: QuorumqCluster, settings: Settings, prefetch: int) -> ConsumeRun:
    """Fill a fresh queue with `settings.messages` bodies, then consume it with `prefetch`, sampling RSS."""
    driver = QuorumqDriver(cluster.urls)
    await driver.declare(QUEUE)
    async with _client(cluster) as client:
        leader = (await client.queue(QUEUE))["leader"]
        await asyncio.sleep(SETTLE_S)
        empty = _rss(cluster)
        started = time.perf_counter()
        with UsageSampler(cluster.pids()) as fill_sampler:
            await _fill(client, settings.messages, settings.body_size)
        fill_seconds = time.perf_counter() - started
        await asyncio.sleep(SETTLE_S)
        filled = _rss(cluster)
        client_filled = own_rss_bytes(os.getpid())
        started = time.perf_counter()
        with (
            UsageSampler(cluster.pids()) as consume_sampler,
            UsageSampler({"client": os.getpid()}, own_rss_bytes) as client_sampler,
        ):
            redelivered = await _consume(client, prefetch, settings.messages, settings.body_size)
        consume_seconds = time.perf_counter() - started
        queue = await client.queue(QUEUE)
        if queue["messages"]:
            counts = {key: queue.get(key) for key in ("messages_ready", "messages_unacknowledged", "leader")}
            raise RuntimeError(f"{queue['messages']} messages left in {QUEUE} after the consume: {counts}")
    await driver.delete(QUEUE)
    return ConsumeRun(
        prefetch=prefetch,
        messages=settings.messages,
        body_size=settings.body_size,
        leader=leader,
        fill_seconds=fill_seconds,
        consume_seconds=consume_seconds,
        rss_empty=empty,
        fill_peak=fill_sampler.peak_rss,
        rss_filled=filled,
        consume_peak=consume_sampler.peak_rss,
        client_filled=client_filled,
        client_peak=client_sampler.usage["client"].peak_rss_bytes,
        redelivered=redelivered,
    )


def _mib(value: int) -> str:
    return f"{value / MIB:,.0f}"


def rows(runs: list[ConsumeRun]) -> list[list[str]]:
    """One row per prefetch."""
    return [
        [
            str(run.prefetch),
            f"{run.messages} x {_mib(run.body_size)} MiB",
            f"{run.fill_seconds:.3f}",
            f"{run.consume_seconds:.3f}",
            run.leader,
            "; ".join(
                f"{name} {_mib(run.rss_empty[name])} -> {_mib(run.rss_filled[name])} "
                f"({_mib(run.fill_peak[name])})"
                for name in run.rss_empty
            ),
            "; ".join(
                f"{name} {_mib(run.consume_peak[name])} (+{_mib(run.growth(name))})"
                for name in run.rss_filled
            ),
            f"{run.growth(run.leader) / run.in_flight_bytes:.2f}"
            f" (+{_mib(run.growth(run.leader))} of {_mib(run.in_flight_bytes)} MiB)",
            f"+{_mib(run.client_peak - run.client_filled)}",
            str(run.redelivered),
        ]
        for run in runs
    ]


def markdown(runs: list[ConsumeRun], machine: dict[str, str], command: str) -> str:
    """The results: command, machine, what was measured and the table."""
    lines = ["Command:", "", f"    {command}", "", "Machine:", ""]
    lines += [f"- {label}: {value}" for label, value in machine.items()]
    lines += [
        "",
        textwrap.fill(
            "For each prefetch, a fresh queue declared through node1 is filled with the bodies (random "
            f"bytes, one per publish, {PUBLISH_WINDOW} publishes in flight, each confirmed by a majority), "
            f"the nodes settle {SETTLE_S:g} s, and one subscription of the Python client (msgpack on the "
            "stream) consumes them all, acking each delivered batch as it arrives. Each node's RSS (with "
            "its children) is sampled every 0.1 s; the growth is its peak during the consume over its RSS "
            "just before it, and the leader's growth is set against prefetch x body, what the consumer may "
            "hold unacked. The client's growth is the benchmark process's own RSS, over the same span.",
            width=100,
        ),
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
        *("| " + " | ".join(row) + " |" for row in rows(runs)),
    ]
    return "\n".join(lines) + "\n"


async def _measure_all(cluster: QuorumqCluster, settings: Settings) -> list[ConsumeRun]:
    return [await measure(cluster, settings, prefetch) for prefetch in settings.prefetches]


def run(settings: Settings, work_dir: Path) -> list[ConsumeRun]:
    """Start a fresh cluster under `work_dir`, measure every prefetch on it, and stop it."""
    cluster = QuorumqCluster.start(work_dir)
    try:
        return asyncio.run(_measure_all(cluster, settings))
    finally:
        with contextlib.suppress(Exception):
            cluster.stop()


@click.command()
@click.option("--messages", type=int, default=Settings.messages, show_default=True)
@click.option(
    "--body-mib", type=float, default=Settings.body_size / MIB, show_default=True, help="body size in MiB"
)
@click.option(
    "--prefetch",
    "prefetches",
    type=int,
    multiple=True,
    default=Settings.prefetches,
    show_default=True,
    help="repeat it: one fill and consume each",
)
@click.option(
    "--results",
    type=click.Path(path_type=Path),
    default=None,
    help="results file [default: bench/results/<date>-<commit>-large-bodies.md]",
)
def main(messages: int, body_mib: float, prefetches: tuple[int, ...], results: Path | None) -> None:
    """Measure node memory while a consumer takes large messages with a given prefetch."""
    console = Console(width=CONSOLE_WIDTH)
    machine = describe_machine()
    machine.pop("RabbitMQ (Debian package)", None)  # quorumq alone
    settings = Settings(messages, int(body_mib * MIB), prefetches)
    with tempfile.TemporaryDirectory(prefix="quorumq-large-") as work_dir:
        runs = run(settings, Path(work_dir))
    table = Table(*COLUMNS, title="large bodies: node RSS while consuming")
    for row in rows(runs):
        table.add_row(*row)
    console.print(table)
    command = " ".join(["python -m bench.large_bodies", shlex.join(sys.argv[1:])]).rstrip()
    results = results or RESULTS_DIR / f"{time.strftime('%Y-%m-%d')}-{commit()}-large-bodies.md"
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text("# Large bodies\n\n" + markdown(runs, machine, command))
    console.print(f"written to {results}")


if __name__ == "__main__":
    main()
