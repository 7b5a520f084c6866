"""quorumq vs RabbitMQ quorum queues, side by side on this machine.

    python -m bench.compare [--duration 10] [--backlog 1000000] [--broker quorumq --broker rabbitmq]

Starts a fresh 3-node cluster of each broker in turn, runs the same asyncio workloads against it
(aio-pika for RabbitMQ, quorumq.Client for quorumq), stops it, prints the table and writes it into
docs/benchmarks.md with the machine description and this command.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
from pathlib import Path

import click
from rich.console import Console

from bench.machine import describe_machine, rabbitmq_version
from bench.report import backlog_table, markdown, rich_table, write_results
from bench.suite import BROKERS, WORKLOAD_KEYS, Options, run_broker

CONSOLE_WIDTH = 200
DEFAULT_DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


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
@click.option("--backlog-only", is_flag=True, help="skip the workloads, measure only the backlog")
@click.option("--doc", type=click.Path(path_type=Path), default=DEFAULT_DOC, show_default=True)
@click.option("--no-doc", is_flag=True, help="print the table only")
def main(
    brokers: tuple[str, ...],
    duration: float,
    publishers: int,
    in_flight: int,
    consume_count: int,
    rate: float,
    queues: int,
    backlog: int,
    selected: tuple[str, ...],
    backlog_only: bool,
    doc: Path,
    no_doc: bool,
) -> None:
    """Benchmark quorumq against RabbitMQ quorum queues and write docs/benchmarks.md."""
    options = Options(
        duration=duration,
        publishers=publishers,
        in_flight=in_flight,
        consume_count=consume_count,
        rate=rate,
        queues=queues,
        backlog=backlog,
        workloads=() if backlog_only else selected or WORKLOAD_KEYS,
    )
    console = Console(width=CONSOLE_WIDTH)
    machine = describe_machine()
    runs = []
    with tempfile.TemporaryDirectory(prefix="quorumq-bench-") as work_dir:
        Path(work_dir).chmod(0o755)  # RabbitMQ nodes run as the rabbitmq user
        for broker in brokers:
            console.print(f"[bold]{broker}[/]: starting a fresh 3-node cluster")
            runs.append(run_broker(broker, options, Path(work_dir)))
            console.print(rich_table(runs[-1:]))
    console.print(rich_table(runs))
    if any(run.backlog is not None for run in runs):
        console.print(backlog_table(runs))
    if not no_doc:
        machine["RabbitMQ (Debian package)"] = rabbitmq_version()  # installed by the run when it was missing
        command = "python -m bench.compare " + shlex.join(sys.argv[1:])
        write_results(doc, markdown(runs, machine, command))
        console.print(f"written to {doc}")


if __name__ == "__main__":
    main()
