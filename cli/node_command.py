"""`quorumq server`: run one node in the foreground until SIGTERM or SIGINT."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from pathlib import Path

import click

from cluster import node_logging
from cluster.config import ConfigError, NodeConfig, load_config, setting_docs
from cluster.queues.allocator import keep_freed_memory
from cluster.security.cluster_secret import settle_cluster_secret


def _settings_epilog() -> str:
    """Every setting with its variable, default and meaning (click keeps a paragraph after \\b as is)."""
    lines = ["\b", "Settings: the TOML key, its QUORUMQ_* variable [default], what it is:"]
    for doc in setting_docs():
        lines += [f"  {doc.name}  {doc.variable} [{doc.default}]", f"      {doc.help}"]
    return "\n".join(lines)


@click.command("server", epilog=_settings_epilog())
@click.option("--node", help="This node's name (unique in the cluster).")
@click.option("--data-dir", type=click.Path(path_type=Path), help="Where the node keeps its data.")
@click.option("--http", "http", help="HOST:PORT for the HTTP API (default port 8080).")
@click.option("--raft", "raft", help="HOST:PORT for Raft traffic between nodes.")
@click.option("--amqp", "amqp", help="HOST:PORT for the AMQP 0-9-1 listener (default: none).")
@click.option(
    "--amqps", "amqps", help="HOST:PORT for AMQP over TLS, with the node's tls_cert (default: none)."
)
@click.option("--seed", "seeds", multiple=True, help="NAME@HOST:RAFTPORT of an initial member (repeat).")
@click.option("--join", help="http://HOST:PORT of a running member to join through.")
@click.option("--advertise-http", help="The HTTP URL other nodes use to reach this one.")
@click.option("--advertise-raft", help="HOST:PORT other nodes dial for Raft (default: --raft).")
@click.option("--config", "config_file", type=click.Path(path_type=Path, exists=True), help="A TOML file.")
@click.option("--log-level", default="INFO", show_default=True, help="Python logging level.")
@click.option(
    "--log-format",
    type=click.Choice(node_logging.LOG_FORMATS),
    help="json (one object a line, for log shippers) or text; default json when stderr is no terminal.",
)
def server(
    node: str | None,
    data_dir: Path | None,
    http: str | None,
    raft: str | None,
    amqp: str | None,
    amqps: str | None,
    seeds: tuple[str, ...],
    join: str | None,
    advertise_http: str | None,
    advertise_raft: str | None,
    config_file: Path | None,
    log_level: str,
    log_format: node_logging.LogFormat | None,
) -> None:
    """Run a node. Flags override QUORUMQ_* environment variables, which override --config (a TOML
    file of the settings below). A misspelled QUORUMQ_* variable is a warning; a bad value stops the
    start naming the setting (exit 64)."""
    flags = {
        "node": node,
        "data_dir": data_dir,
        "http": http,
        "raft": raft,
        "amqp": amqp,
        "amqps": amqps,
        "seeds": seeds,
        "join": join,
        "advertise_http": advertise_http,
        "advertise_raft": advertise_raft,
    }
    try:
        config = settle_cluster_secret(load_config(flags, config_file, warn=_warn))
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from exc
    node_logging.configure(config.node, log_level, log_format or node_logging.default_format())
    keep_freed_memory()
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        runner.run(_run(config))


def _warn(message: str) -> None:
    click.echo(f"Warning: {message}", err=True)


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop (a node serving publishes spent about a tenth less CPU per message on it,
    docs/history/performance-log.md), or asyncio's where uvloop is not installed (a dependency only
    where it builds)."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


async def _run(config: NodeConfig) -> None:
    from cli.node_lifecycle import run_node
    from cluster.steady_clock import watch

    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    watching = asyncio.create_task(watch())
    try:
        await run_node(config, stopping)
    finally:
        watching.cancel()
