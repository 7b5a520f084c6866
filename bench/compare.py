"""quorumq vs RabbitMQ quorum queues, side by side on this machine.

    python -m bench.compare [--duration 10] [--backlog 1000000] [--broker quorumq --broker rabbitmq]
                            [--client rabbitmq:java ...] [--doc docs/benchmarks.md]

Starts a fresh 3-node cluster of each broker in turn, runs the same workloads (bench/specs.py) against
it through each selected client (RabbitMQ: its Java client and aio-pika; quorumq: our Python client and
wrk over the JSON contract), stops it, prints the table with every quorumq row's ratio to RabbitMQ's
fastest client, and writes it with the machine description and this command to a results file under
bench/results/ (and into a document between its results markers with --doc).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click
from rich.console import Console

from bench.machine import describe_machine, rabbitmq_version
from bench.report import backlog_table, markdown, rich_table, write_results
from bench.suite import BROKERS, CLIENT_CHOICES, WORKLOAD_KEYS, Options, run_broker
from cli import output

CONSOLE_WIDTH = 200
RESULTS_DIR = Path(__file__).resolve().parent / "results"


def commit() -> str:
    """The short commit of the checkout, with `+dirty` when it has uncommitted changes."""
    root = Path(__file__).resolve().parent.parent
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True)
    return (head.stdout.strip() or "unknown") + ("+dirty" if dirty.stdout.strip() else "")


@click.command()
@click.option("--broker", "brokers", multiple=True, type=click.Choice(BROKERS), default=BROKERS)
@click.option(
    "--duration", type=float, default=Options.duration, show_default=True, help="seconds per timed run"
)
@click.option("--publishers", type=int, default=Options.publishers, show_default=True)
@click.option(
    "--in-flight", type=int, default=Options.in_flight, show_default=True, help="unconfirmed per publisher"
)
@click.option("--consume-count", type=int, default=Options.consume_count, show_default=True)
@click.option("--rate", type=float, default=Options.rate, show_default=True, help="offered msg/s for (c)")
@click.option("--queues", type=int, default=Options.queues, show_default=True, help="queues for (d)")
@click.option(
    "--backlog", type=int, default=Options.backlog, show_default=True, help="0 skips the backlog run"
)
@click.option(
    "--workload", "selected", multiple=True, type=click.Choice(WORKLOAD_KEYS), help="only these (repeat it)"
)
@click.option(
    "--single-publishers",
    type=int,
    default=Options.single_publishers,
    show_default=True,
    help="publishers of (s), one message per request each",
)
@click.option(
    "--client", "clients", multiple=True, type=click.Choice(CLIENT_CHOICES), help="only these (repeat it)"
)
@click.option("--backlog-only", is_flag=True, help="skip the workloads, measure only the backlog")
@click.option(
    "--restart-poll",
    type=click.Choice(["guest", "user", "token"]),
    default=Options.restart_poll,
    show_default=True,
    help="how the backlog's restart poll authenticates to quorumq: the loopback guest (no hash), a stored "
    "user's Basic credentials (scrypt once per node start) or its bearer token taken before the restart",
)
@click.option(
    "--results",
    type=click.Path(path_type=Path),
    default=None,
    help="results file [default: bench/results/<date>-<commit>.md]",
)
@click.option(
    "--doc", type=click.Path(path_type=Path), default=None, help="also write into this document's markers"
)
def main(
    brokers: tuple[str, ...],
    duration: float,
    publishers: int,
    in_flight: int,
    single_publishers: int,
    consume_count: int,
    rate: float,
    queues: int,
    backlog: int,
    selected: tuple[str, ...],
    clients: tuple[str, ...],
    backlog_only: bool,
    restart_poll: str,
    results: Path | None,
    doc: Path | None,
) -> None:
    """Benchmark quorumq against RabbitMQ quorum queues and write the results file."""
    options = Options(
        duration=duration,
        publishers=publishers,
        in_flight=in_flight,
        single_publishers=single_publishers,
        consume_count=consume_count,
        rate=rate,
        queues=queues,
        backlog=backlog,
        restart_poll=restart_poll,
        workloads=() if backlog_only else selected or WORKLOAD_KEYS,
        clients=clients or CLIENT_CHOICES,
    )
    console = Console(width=CONSOLE_WIDTH)
    machine = describe_machine()
    runs = []
    with tempfile.TemporaryDirectory(prefix="quorumq-bench-") as work_dir:
        Path(work_dir).chmod(0o755)  # RabbitMQ nodes run as the rabbitmq user
        for broker in brokers:
            console.print(f"[bold]{broker}[/]: starting a fresh 3-node cluster")
            with output.progress(f"{broker}: starting", None) as bar:
                broker_runs = run_broker(broker, options, Path(work_dir), bar.describe)
            console.print(rich_table(broker_runs))
            runs += broker_runs
    console.print(rich_table(runs))
    if any(run.backlog is not None for run in runs):
        console.print(backlog_table(runs))
    if "rabbitmq" in brokers:
        machine["RabbitMQ (Debian package)"] = rabbitmq_version()  # installed by the run when it was missing
    command = "python -m bench.compare " + shlex.join(sys.argv[1:])
    section = markdown(runs, machine, command)
    results = results or RESULTS_DIR / f"{time.strftime('%Y-%m-%d')}-{commit()}.md"
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text("# Benchmark results\n\n" + section)
    console.print(f"written to {results}")
    if doc is not None:
        write_results(doc, section)
        console.print(f"written to {doc}")


if __name__ == "__main__":
    main()
