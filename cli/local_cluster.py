"""`quorumq cluster start`: a local cluster of real node processes on 127.0.0.1."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import click
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn
from rich.table import Table

from api.client import SyncClient
from api.client_errors import QuorumqError

READY_TIMEOUT_S = 60.0
DEMO_QUEUE = "demo"
DEMO_MESSAGES = 10


@dataclass
class LocalNode:
    """One node process of a local cluster."""

    name: str
    http_port: int
    raft_port: int
    data_dir: Path
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """The node's HTTP base URL."""
        return f"http://127.0.0.1:{self.http_port}"


def plan_nodes(count: int, base_port: int, data_dir: Path) -> list[LocalNode]:
    """Node i serves HTTP on base+i-1 and Raft on base+100+i-1."""
    return [
        LocalNode(f"node{i}", base_port + i - 1, base_port + 100 + i - 1, data_dir / f"node{i}")
        for i in range(1, count + 1)
    ]


def start_nodes(nodes: list[LocalNode], log_dir: Path) -> None:
    """Spawn every node as its own `quorumq server` process."""
    seeds = [f"--seed={n.name}@127.0.0.1:{n.raft_port}" for n in nodes]
    log_dir.mkdir(parents=True, exist_ok=True)
    for node in nodes:
        command = [
            sys.executable,
            "-m",
            "cli.app",
            "server",
            f"--node={node.name}",
            f"--data-dir={node.data_dir}",
            f"--http=127.0.0.1:{node.http_port}",
            f"--raft=127.0.0.1:{node.raft_port}",
            *seeds,
        ]
        log_file = (log_dir / f"{node.name}.log").open("ab")
        node.process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT)


def stop_nodes(nodes: list[LocalNode]) -> None:
    """SIGTERM every node, then wait for each (SIGKILL after 10 s)."""
    for node in nodes:
        if node.process is not None and node.process.poll() is None:
            node.process.send_signal(signal.SIGTERM)
    for node in nodes:
        if node.process is not None:
            try:
                node.process.wait(10)
            except subprocess.TimeoutExpired:
                node.process.kill()
                node.process.wait()


def wait_ready(nodes: list[LocalNode], console: Console) -> None:
    """Wait until every node reports a metadata leader, showing progress."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    pending = {n.name: n for n in nodes}
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), console=console, transient=True) as bar:
        task = bar.add_task(f"waiting for {len(nodes)} nodes", total=len(nodes))
        while pending:
            for name, node in list(pending.items()):
                if node.process is not None and node.process.poll() is not None:
                    raise click.ClickException(f"{name} exited with code {node.process.returncode}")
                try:
                    with SyncClient([node.url], timeout=1.0) as client:
                        if client.health().get("status") == "ok":
                            del pending[name]
                            bar.advance(task)
                except QuorumqError:
                    pass
            if time.monotonic() > deadline:
                raise click.ClickException(f"nodes not ready after {READY_TIMEOUT_S:.0f}s: {sorted(pending)}")
            bar.update(task, description=f"waiting for {', '.join(sorted(pending)) or 'nothing'}")
            time.sleep(0.2)


def node_table(nodes: list[LocalNode]) -> Table:
    """The table printed once the cluster is ready."""
    table = Table(title="quorumq local cluster")
    for column in ("node", "http", "raft", "pid"):
        table.add_column(column)
    for node in nodes:
        pid = str(node.process.pid) if node.process else "-"
        table.add_row(node.name, node.url, f"127.0.0.1:{node.raft_port}", pid)
    return table


def run_demo(nodes: list[LocalNode], console: Console) -> None:
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


@cluster_group.command("start")
@click.option("--nodes", "count", type=click.IntRange(1, 9), default=3, show_default=True)
@click.option("--base-port", type=click.IntRange(1024, 65000), default=8080, show_default=True)
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("data/local-cluster"),
    show_default=True,
)
@click.option("--demo/--no-demo", default=False, help="Show a publish/confirm/consume round trip.")
@click.option("--once", is_flag=True, help="Stop the cluster after it is ready (and the demo ran).")
def start(count: int, base_port: int, data_dir: Path, demo: bool, once: bool) -> None:
    """Start NODES nodes on 127.0.0.1 in the foreground; Ctrl-C stops them cleanly."""
    console = Console()
    nodes = plan_nodes(count, base_port, data_dir.resolve())
    start_nodes(nodes, data_dir.resolve() / "logs")
    try:
        wait_ready(nodes, console)
        console.print(node_table(nodes))
        if demo:
            run_demo(nodes, console)
        if once:
            return
        console.print("cluster running; press Ctrl-C to stop")
        while all(n.process is not None and n.process.poll() is None for n in nodes):
            time.sleep(0.5)
        raise click.ClickException("a node exited; stopping the cluster")
    except KeyboardInterrupt:
        console.print("stopping")
    finally:
        stop_nodes(nodes)
