"""`quorumq-jepsen`: run fault schedules against a real cluster in network namespaces, or re-check a run."""

from __future__ import annotations

import shlex
import signal
import sys
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from types import FrameType

import click

from cli import output
from cli.node_processes import ClusterError
from jepsen_tests.checker import check_total_queue
from jepsen_tests.history import read_history
from jepsen_tests.hosts import CommandFailed, HostsUnavailable
from jepsen_tests.nemesis import NEMESES
from jepsen_tests.nemesis_log import read_fault_spans
from jepsen_tests.report import verdict_text, write_report
from jepsen_tests.runner import RunConfig, run
from quorumq import QuorumqError

EXIT_INVALID = 1
EXIT_UNAVAILABLE = 69


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM stops a run as Ctrl-C does, so every host is cleaned up."""
    raise KeyboardInterrupt(f"signal {signum}")


def _nemesis_list(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in value.split(",") if n.strip())
    unknown = [n for n in names if n not in NEMESES]
    if unknown:
        raise click.BadParameter(f"unknown {', '.join(unknown)}; choose from {', '.join(NEMESES)}")
    return names


@click.group()
@click.version_option(version("quorumq"), prog_name="quorumq-jepsen")
def main() -> None:
    """Jepsen-style fault injection for quorumq (needs root: network namespaces, iptables, tc)."""


@main.command("run")
@click.option(
    "--time", "duration", type=click.FloatRange(5), default=60.0, show_default=True, help="Workload seconds."
)
@click.option(
    "--nemesis",
    "nemeses",
    default=",".join(RunConfig.nemeses),
    show_default=True,
    callback=_nemesis_list,
    help=f"Comma-separated nemesis families, of {', '.join(NEMESES)}.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the schedule and workload.")
@click.option("--nodes", type=click.IntRange(3, 9), default=5, show_default=True)
@click.option(
    "--queues", type=click.IntRange(1, 3), default=None, help="Queue count (default: 1-3 from the seed)."
)
@click.option(
    "--repeat", type=click.IntRange(1), default=1, show_default=True, help="Runs, seeds SEED, SEED+1, ..."
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("runs"),
    show_default=True,
)
@click.option("--keep-data", is_flag=True, help="Keep the nodes' data directories.")
@click.option(
    "--amqp",
    is_flag=True,
    help="AMQP client mode: more publishers and consumers, over AMQP 0-9-1 (aio-pika), on every node.",
)
def run_command(
    duration: float,
    nemeses: tuple[str, ...],
    seed: int,
    nodes: int,
    queues: int | None,
    repeat: int,
    out_dir: Path,
    keep_data: bool,
    amqp: bool,
) -> None:
    """Run schedules; prints each verdict and exits 1 if any run failed its check or broke off."""
    # A process started in the background of a non-interactive shell inherits SIGINT ignored; put
    # Python's own handler back so Ctrl-C stops the run. It must be `default_int_handler` itself:
    # asyncio.run then takes SIGINT over and cancels the run cleanly, where a handler raising at an
    # arbitrary point can land in a finaliser and be swallowed.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    failed = []
    command = shlex.join(["quorumq-jepsen", *sys.argv[1:]])
    with output.progress("fault-injection runs", repeat, beside_output=True) as bar:
        for run_seed in range(seed, seed + repeat):
            config = RunConfig(
                duration, nemeses, run_seed, nodes, queues, out_dir=out_dir, keep_data=keep_data, amqp=amqp
            )
            if not _one_run(config, command, bar.say):
                failed.append(run_seed)
            bar.advance(1)
    if repeat > 1:
        click.echo(f"{repeat - len(failed)} of {repeat} runs passed; failed seeds: {failed or 'none'}")
    if failed:
        sys.exit(EXIT_INVALID)


def _one_run(config: RunConfig, command: str, tell: Callable[[str], None]) -> bool:
    """One run, its verdict printed; True when it passed its check."""
    try:
        result = run(config, progress=tell, command=command)
    except HostsUnavailable as exc:
        click.echo(f"cannot run the fault suite here: {exc}", err=True)
        sys.exit(EXIT_UNAVAILABLE)
    except (ClusterError, CommandFailed, QuorumqError) as exc:
        click.echo(f"seed {config.seed}: the run broke off: {type(exc).__name__}: {exc}\n")
        return False
    write_report(result)
    click.echo(verdict_text(result))
    click.echo(f"report: {result.run_dir}\n")
    return result.passed


@main.command("check")
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False, exists=True))
def check_command(run_dir: Path) -> None:
    """Re-check RUN_DIR/history.jsonl (with the fault windows of RUN_DIR/nemesis.jsonl)."""
    verdict = check_total_queue(
        read_history(run_dir / "history.jsonl"), read_fault_spans(run_dir / "nemesis.jsonl")
    )
    click.echo(verdict.summary())
    if not verdict.valid:
        sys.exit(EXIT_INVALID)


if __name__ == "__main__":
    main()
