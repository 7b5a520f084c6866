"""`quorumq cluster start`: a local cluster of real node processes on 127.0.0.1."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import click
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn
from rich.table import Table

from cli.command_group import Settings, pass_settings
from cli.node_processes import ClusterError, NodeProcess, loopback_hosts, plan_cluster, wait_healthy
from cli.output import print_json, print_line
from quorumq import SyncClient

DEMO_QUEUE = "demo"
DEMO_MESSAGES = 10


def wait_ready(nodes: list[NodeProcess], console: Console) -> None:
    """Wait until every node is healthy, showing progress."""
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), console=console, transient=True) as bar:
        task = bar.add_task(f"waiting for {len(nodes)} nodes", total=len(nodes))
        for node in nodes:
            bar.update(task, description=f"waiting for {node.name}")
            try:
                wait_healthy([node])
            except ClusterError as exc:
                raise click.ClickException(f"{exc}; see {node.log_path}") from exc
            bar.advance(task)


def node_table(nodes: list[NodeProcess]) -> Table:
    """The table printed once the cluster is ready."""
    table = Table(title="quorumq local cluster")
    for column in ("node", "http", "raft", "amqp", "pid"):
        table.add_column(column)
    for node in nodes:
        pid = str(node.process.pid) if node.process else "-"
        amqp = f"amqp://{node.host}:{node.amqp_port}" if node.amqp_port else "-"
        table.add_row(node.name, node.url, f"{node.host}:{node.raft_port}", amqp, pid)
    return table


def run_demo(nodes: list[NodeProcess], console: Console) -> None:
    """Declare, publish with confirms, consume and ack through different nodes."""
    urls = [n.url for n in nodes]
    with SyncClient(urls) as client:
        created = client.declare(DEMO_QUEUE, {"x-queue-type": "quorum"})
        console.print(f"declared queue [bold]{DEMO_QUEUE}[/] ({'created' if created else 'already there'})")
        bodies = [f"order-{i}" for i in range(DEMO_MESSAGES)]
        ids = client.publish(DEMO_QUEUE, bodies)
        info = client.queue(DEMO_QUEUE)
        console.print(
            f"published {len(ids)} messages, confirmed by a majority of {info['members']} "
            f"(leader {info['leader']})"
        )
    with SyncClient(urls[::-1]) as client:
        tag = client.consume(DEMO_QUEUE, prefetch=DEMO_MESSAGES)
        received: list = []
        deadline = time.monotonic() + 10
        while len(received) < DEMO_MESSAGES and time.monotonic() < deadline:
            batch = client.deliveries(DEMO_QUEUE, tag, max=DEMO_MESSAGES, wait=1.0)
            if batch:
                client.ack(DEMO_QUEUE, tag, [d.id for d in batch])
                received.extend(batch)
        client.cancel(DEMO_QUEUE, tag)
        console.print(f"consumed and acked {len(received)} messages: {[d.body.decode() for d in received]}")
        left = client.queue(DEMO_QUEUE)["messages"]
        console.print(f"queue {DEMO_QUEUE} now holds {left} messages")
    if len(received) != DEMO_MESSAGES:
        raise click.ClickException(f"demo consumed {len(received)} of {DEMO_MESSAGES} messages")


@click.group("cluster")
def cluster_group() -> None:
    """Run a local cluster."""


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM stops the local cluster the way Ctrl-C does."""
    raise KeyboardInterrupt


@cluster_group.command("start")
@click.option("--nodes", "count", type=click.IntRange(1, 9), default=3, show_default=True)
@click.option("--base-port", type=click.IntRange(1024, 65000), default=8080, show_default=True)
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("data/local-cluster"),
    show_default=True,
)
@click.option(
    "--hosts",
    type=click.IntRange(1, 9),
    default=1,
    show_default=True,
    help="Play this many hosts with loopback addresses 127.0.0.1.. (several nodes per host, one per core).",
)
@click.option(
    "--amqp-port",
    type=click.IntRange(0, 65000),
    default=5672,
    show_default=True,
    help="Node i serves AMQP 0-9-1 on this port + i - 1 (0: no AMQP listener).",
)
@click.option("--demo/--no-demo", default=False, help="Show a publish/confirm/consume round trip.")
@click.option("--once", is_flag=True, help="Stop the cluster after it is ready (and the demo ran).")
def start(
    count: int, base_port: int, data_dir: Path, hosts: int, amqp_port: int, demo: bool, once: bool
) -> None:
    """Start NODES nodes on 127.0.0.1 (or on HOSTS loopback addresses) in the foreground; Ctrl-C (or
    SIGTERM) stops them cleanly."""
    signal.signal(signal.SIGTERM, _interrupt)
    console = Console()
    ports = [base_port + i for i in range(count)] + [base_port + 100 + i for i in range(count)]
    nodes = plan_cluster(count, data_dir.resolve(), ports=ports, hosts=loopback_hosts(count, hosts))
    for index, node in enumerate(nodes):
        node.supervised = True
        node.amqp_port = amqp_port + index if amqp_port else None
        node.start()
    try:
        wait_ready(nodes, console)
        console.print(node_table(nodes))
        if demo:
            run_demo(nodes, console)
        if once:
            return
        console.print("cluster running; press Ctrl-C to stop")
        while all(n.running for n in nodes):
            time.sleep(0.5)
        raise click.ClickException("a node exited; stopping the cluster")
    except KeyboardInterrupt:
        console.print("stopping")
    finally:
        for node in nodes:
            node.stop()


@cluster_group.command("forget")
@click.argument("node_name")
@pass_settings
def forget(settings: Settings, node_name: str) -> None:
    """Remove NODE_NAME, a permanently lost node that is stopped, from the cluster (talks to --node)."""
    with settings.connect() as client:
        client.forget_node(node_name)
    if settings.formatter == "json":
        print_json({"forgotten": node_name})
    else:
        print_line(f"node {node_name} forgotten; drop its replicas with: quorumq-queues shrink {node_name}")
