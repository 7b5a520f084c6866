"""The `quorumq-queues` command: replica management in the style of `rabbitmq-queues`.

Exit codes follow rabbitmq-queues: 0 done, 64 usage error, 69 no node reachable or (for
check_if_node_is_quorum_critical) the check failed, 70 the cluster refused or failed the operation.
"""

import contextlib
import sys
from collections.abc import Callable, Iterator
from importlib.metadata import version
from typing import Any

import click

from cli import output
from cli.command_group import (
    EXIT_UNAVAILABLE,
    QuorumqGroup,
    Settings,
    global_options,
    pass_settings,
    settings,
)
from cli.replica_plans import (
    grow_targets,
    grow_to_count_additions,
    leader_counts,
    matching,
    quorum_critical,
    rebalance_moves,
    shrink_targets,
    vhost_of,
)
from quorumq import QuorumqError, SyncClient

EXIT_SOFTWARE = 70
MEMBER_COLUMNS = ("vhost", "name", "size", "result")
GROWN_COLUMNS = ("vhost", "name", "node", "size", "result")
CHECKPOINT_COLUMNS = ("vhost", "name", "node", "snapshot_index", "result")
SYNC_FIELDS = ("membership", "raft_state")
STATUS_COLUMNS = (
    ("Node Name", "node"),
    ("Raft State", "raft_state"),
    ("Membership", "membership"),
    ("Last Log Index", "last_log_index"),
    ("Commit Index", "commit_index"),
    ("Last Applied", "last_applied"),
    ("Snapshot Index", "snapshot_index"),
    ("Term", "term"),
    ("Lag", "lag"),
    ("Recently Active", "recently_active"),
    ("Counted", "counted"),
    ("Repairing", "repairing"),
    ("Replaced", "replaced"),
)


class QueuesGroup(QuorumqGroup):
    """Client errors become one line on stderr and a rabbitmq-queues exit code."""

    server_error_exit = EXIT_SOFTWARE
    show_http_status = False


@click.group(cls=QueuesGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version("quorumq"), prog_name="quorumq-queues")
@global_options(
    "The node to talk to",
    click.option(
        "-t",
        "--timeout",
        type=click.FloatRange(min=1.0),
        default=90.0,
        show_default=True,
        help="Seconds each request may take (adding a member waits until it caught up).",
    ),
)
@click.pass_context
def cli(ctx: click.Context, **given: Any) -> None:
    """Manage quorum queue replicas (add_member, delete_member, grow, grow_to_count, shrink, rebalance,
    transfer_leadership, force_checkpoint, quorum_status, peek and the health checks).

    Global options may come before or after the command, as rabbitmq-queues takes them."""
    ctx.obj = settings(ctx, **given)


def _member_result(settings: Settings, queue: str, node: str, members: list[str]) -> None:
    if settings.formatter == "json":
        output.print_json({"queue": queue, "node": node, "members": members})
    else:
        output.print_line(f"queue '{queue}' members: {', '.join(members)}")


@cli.command("add_member")
@click.argument("queue")
@click.argument("node")
@pass_settings
def add_member(settings: Settings, queue: str, node: str) -> None:
    """Add a replica of QUEUE on NODE (a learner until it caught up, then a voter)."""
    with settings.connect() as client:
        answer = client.add_member(queue, node)
    _member_result(settings, queue, node, answer["members"])


@cli.command("delete_member")
@click.argument("queue")
@click.argument("node")
@pass_settings
def delete_member(settings: Settings, queue: str, node: str) -> None:
    """Remove the replica of QUEUE on NODE (never the last member, never the live majority)."""
    with settings.connect() as client:
        answer = client.delete_member(queue, node)
    _member_result(settings, queue, node, answer["members"])


def _require_node(client: SyncClient, node: str) -> None:
    if node not in {n["name"] for n in client.nodes()}:
        raise click.ClickException(f"node '{node}' is not a member of the cluster")


def _print_member_rows(
    settings: Settings,
    rows: list[dict[str, Any]],
    errors_only: bool,
    columns: tuple[str, ...] = MEMBER_COLUMNS,
) -> None:
    shown = [r for r in rows if r["result"] != "ok"] if errors_only else rows
    if settings.formatter == "json":
        output.print_json(shown)
    else:
        output.print_table(columns, ([r[c] for c in columns] for r in shown))


VhostClients = Callable[[str], SyncClient]
"""The client naming the queues of a vhost."""
Change = tuple[str, str, str]
"""A replica to add or remove: its queue's vhost, the queue's name, the node."""


@contextlib.contextmanager
def vhost_clients(settings: Settings, client: SyncClient) -> Iterator[VhostClients]:
    """Clients by vhost: `client` for --vhost's, another opened for each other vhost the first time it is
    asked for, all of them closed after."""
    opened = {settings.vhost: client}
    with contextlib.ExitStack() as stack:

        def of(vhost: str) -> SyncClient:
            if vhost not in opened:
                opened[vhost] = stack.enter_context(settings.connect(vhost))
            return opened[vhost]

        yield of


def _change_each(
    clients: VhostClients, changes: list[Change], sizes: dict[tuple[str, str], int], add: bool
) -> list[dict[str, Any]]:
    """Add (or remove) each replica of `changes`, with a progress bar: a row per change with the queue's
    size after it (`sizes` by vhost and name, updated as they go) and `ok` or the error."""
    rows = []
    for vhost, queue, node in output.progressing(changes, "adding replicas" if add else "removing replicas"):
        client = clients(vhost)
        change = client.add_member if add else client.delete_member
        try:
            sizes[(vhost, queue)], result = len(change(queue, node)["members"]), "ok"
        except QuorumqError as exc:
            result = f"error: {exc.reason or exc.code}"
        size = sizes[(vhost, queue)]
        rows.append({"vhost": vhost, "name": queue, "node": node, "size": size, "result": result})
    return rows


def _sizes(queues: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    return {(vhost_of(q), q["name"]): len(q["members"]) for q in queues}


VHOST_PATTERN = click.option(
    "--vhost-pattern", help="Only queues of the vhosts whose name matches this regular expression."
)


@cli.command("grow")
@click.argument("node")
@click.argument("strategy", type=click.Choice(["all", "even"]))
@click.option("--queue-pattern", help="Only queues whose name matches this regular expression.")
@VHOST_PATTERN
@click.option("--errors-only", is_flag=True, help="Show only the queues that failed.")
@pass_settings
def grow(
    settings: Settings,
    node: str,
    strategy: str,
    queue_pattern: str | None,
    vhost_pattern: str | None,
    errors_only: bool,
) -> None:
    """Add a replica on NODE to every matching queue (`all`) or those with an even member count, in
    every vhost (or those --vhost-pattern matches)."""
    with settings.connect() as client, vhost_clients(settings, client) as clients:
        _require_node(client, node)
        queues = grow_targets(client.queues(), node, strategy, queue_pattern, vhost_pattern)
        changes = [(vhost_of(q), q["name"], node) for q in queues]
        rows = _change_each(clients, changes, _sizes(queues), add=True)
    _print_member_rows(settings, rows, errors_only)


@cli.command("grow_to_count")
@click.argument("count", type=click.IntRange(min=1))
@click.option("--queue-pattern", help="Only queues whose name matches this regular expression.")
@VHOST_PATTERN
@click.option("--errors-only", is_flag=True, help="Show only the queues that failed.")
@pass_settings
def grow_to_count(
    settings: Settings, count: int, queue_pattern: str | None, vhost_pattern: str | None, errors_only: bool
) -> None:
    """Add replicas until every matching queue has COUNT (or one on every running node), each on the
    running node hosting the fewest replicas."""
    with settings.connect() as client, vhost_clients(settings, client) as clients:
        running = sorted(n["name"] for n in client.nodes() if n["status"] == "up")
        queues = client.queues()
        additions = grow_to_count_additions(queues, running, count, queue_pattern, vhost_pattern)
        changes = [(a.vhost, a.queue, a.node) for a in additions]
        rows = _change_each(clients, changes, _sizes(queues), add=True)
    _print_member_rows(settings, rows, errors_only, GROWN_COLUMNS)


@cli.command("shrink")
@click.argument("node")
@VHOST_PATTERN
@click.option("--errors-only", is_flag=True, help="Show only the queues that failed.")
@pass_settings
def shrink(settings: Settings, node: str, vhost_pattern: str | None, errors_only: bool) -> None:
    """Remove NODE's replica from every queue that has one (e.g. before decommissioning NODE), in every
    vhost (or those --vhost-pattern matches)."""
    with settings.connect() as client, vhost_clients(settings, client) as clients:
        queues = shrink_targets(client.queues(), node, vhost_pattern)
        changes = [(vhost_of(q), q["name"], node) for q in queues]
        rows = _change_each(clients, changes, _sizes(queues), add=False)
    _print_member_rows(settings, rows, errors_only)


@cli.command("rebalance")
@click.argument("queue_type", required=False, type=click.Choice(["quorum", "all"]), default="all")
@click.option("--queue-pattern", help="Only queues whose name matches this regular expression.")
@VHOST_PATTERN
@pass_settings
def rebalance(
    settings: Settings, queue_type: str, queue_pattern: str | None, vhost_pattern: str | None
) -> None:
    """Spread queue leaders evenly over the running nodes by leadership transfer (members stay)."""
    with settings.connect() as client, vhost_clients(settings, client) as clients:
        running = sorted(n["name"] for n in client.nodes() if n["status"] == "up")
        queues = matching(client.queues(), queue_pattern, vhost_pattern)
        before = leader_counts(queues, running)
        failures = []
        for move in rebalance_moves(queues, running):
            try:
                clients(move.vhost).transfer_leader(move.queue, move.target)
            except QuorumqError as exc:
                failures.append(
                    {
                        "vhost": move.vhost,
                        "queue": move.queue,
                        "target": move.target,
                        "error": exc.reason or exc.code,
                    }
                )
        after = leader_counts(matching(client.queues(), queue_pattern, vhost_pattern), running)
    rows = [{"node": n, "leaders_before": before[n], "leaders_after": after[n]} for n in running]
    if settings.formatter == "json":
        output.print_json({"nodes": rows, "failures": failures})
        return
    output.print_table(
        ("Node Name", "Leaders Before", "Leaders After"),
        ([r["node"], r["leaders_before"], r["leaders_after"]] for r in rows),
    )
    for failure in failures:
        output.print_line(
            f"queue '{failure['queue']}' in vhost '{failure['vhost']}' stayed: {failure['error']}"
        )


@cli.command("transfer_leadership")
@click.argument("queue")
@click.argument("node", required=False)
@pass_settings
def transfer_leadership(settings: Settings, queue: str, node: str | None) -> None:
    """Hand the leadership of QUEUE to its member NODE (default: the first other member that is up)."""
    with settings.connect() as client:
        if node is None:
            up = {n["name"] for n in client.nodes() if n["status"] == "up"}
            stats = client.queue(queue)
            others = [m for m in sorted(stats["members"]) if m != stats["leader"] and m in up]
            if not others:
                raise click.ClickException(f"queue '{queue}' has no other member up to lead it")
            node = others[0]
        client.transfer_leader(queue, node)
    if settings.formatter == "json":
        output.print_json({"queue": queue, "leader": node})
    else:
        output.print_line(f"queue '{queue}' is led by {node}")


@cli.command("force_checkpoint")
@click.option("--queue-pattern", help="Only queues whose name matches this regular expression.")
@VHOST_PATTERN
@click.option("--errors-only", is_flag=True, help="Show only the replicas that failed.")
@pass_settings
def force_checkpoint(
    settings: Settings, queue_pattern: str | None, vhost_pattern: str | None, errors_only: bool
) -> None:
    """Make every replica of every matching queue take a snapshot now (the log before it is then
    released as soon as the next one allows)."""
    with settings.connect() as client, vhost_clients(settings, client) as clients:
        replicas = [
            (vhost_of(q), q["name"], m)
            for q in matching(client.queues(), queue_pattern, vhost_pattern)
            for m in sorted(q["members"])
        ]
        rows = []
        for vhost, queue, node in output.progressing(replicas, "taking snapshots"):
            try:
                status = clients(vhost).checkpoint(queue, node)
                index, result = status["snapshot_index"], "requested" if status.get("requested") else "ok"
            except QuorumqError as exc:
                index, result = None, f"error: {exc.reason or exc.code}"
            rows.append(
                {"vhost": vhost, "name": queue, "node": node, "snapshot_index": index, "result": result}
            )
    shown = [r for r in rows if not r["result"].startswith(("ok", "requested"))] if errors_only else rows
    if settings.formatter == "json":
        output.print_json(shown)
    else:
        output.print_table(CHECKPOINT_COLUMNS, ([r[c] for c in CHECKPOINT_COLUMNS] for r in shown))


@cli.command("check_if_new_quorum_queue_replicas_have_finished_initial_sync")
@click.argument("node", required=False)
@pass_settings
def check_if_new_quorum_queue_replicas_have_finished_initial_sync(
    settings: Settings, node: str | None
) -> None:
    """Fail (exit 69) while a replica on NODE (default: the node talked to) is not yet a voter that its
    queue's leader reaches: one added lately still catching up, or one on a node that is down."""
    with settings.connect() as client, vhost_clients(settings, client) as clients:
        node = node or client.health()["node"]
        _require_node(client, node)
        behind = []
        for queue in matching(client.queues(), None):
            if node in queue["members"]:
                vhost = vhost_of(queue)
                rows = clients(vhost).members(queue["name"])["members"]
                replica: dict[str, Any] = next((m for m in rows if m["node"] == node), {})
                if not _synced(replica):
                    fields = {k: replica.get(k) for k in SYNC_FIELDS}
                    behind.append({"vhost": vhost, "queue": queue["name"], **fields})
    if settings.formatter == "json":
        output.print_json({"node": node, "not_synced": behind})
    for row in [] if settings.formatter == "json" else behind:
        output.print_line(
            f"quorum queue '{row['queue']}' in vhost '{row['vhost']}' has a replica on {node} that has not"
            f" finished its initial sync ({row['membership']}, {row['raft_state']})"
        )
    if not behind and settings.formatter != "json":
        output.print_line(f"All quorum queue replicas on node {node} have finished their initial sync")
    if behind:
        sys.exit(EXIT_UNAVAILABLE)


def _synced(member: dict[str, Any]) -> bool:
    """A replica a leader counts: a voter, answering for itself, not repairing."""
    answering = member.get("raft_state") not in (None, "unknown", "unreachable", "no_replica")
    return member.get("membership") == "voter" and answering and not member.get("repairing")


@cli.command("peek")
@click.argument("queue")
@click.argument("position", type=click.IntRange(min=1))
@pass_settings
def peek(settings: Settings, queue: str, position: int) -> None:
    """Show the ready message of QUEUE at POSITION (1 is the next to be delivered), without consuming
    it; exit 70 when QUEUE has fewer ready messages."""
    with settings.connect() as client:
        delivery = client.peek(queue, position)
    if delivery is None:
        click.echo(f"Error: queue '{queue}' has no message at position {position}", err=True)
        sys.exit(EXIT_SOFTWARE)
    if settings.formatter == "json":
        output.print_json(output.delivery_json(delivery))
    else:
        output.print_deliveries([delivery], settings.formatter)


@cli.command("quorum_status")
@click.argument("queue")
@pass_settings
def quorum_status(settings: Settings, queue: str) -> None:
    """Every member of QUEUE: Raft state, membership, log indexes, term, lag behind the leader, and
    whether it is repairing damage found at open (then the leader does not count it)."""
    with settings.connect() as client:
        status = client.members(queue)
    if settings.formatter == "json":
        output.print_json(status["members"])
        return
    output.print_info(f"Status of quorum queue '{queue}' (leader {status['leader']})")
    output.print_table(
        [title for title, _ in STATUS_COLUMNS],
        ([m.get(key) for _, key in STATUS_COLUMNS] for m in status["members"]),
    )


@cli.command("check_if_node_is_quorum_critical")
@click.argument("node")
@pass_settings
def check_if_node_is_quorum_critical(settings: Settings, node: str) -> None:
    """Fail (exit 69) when stopping NODE would leave some quorum queue without a quorum."""
    with settings.connect() as client:
        _require_node(client, node)
        up = {n["name"] for n in client.nodes() if n["status"] == "up"}
        critical = quorum_critical(client.queues(), node, up)
    if settings.formatter == "json":
        output.print_json({"node": node, "quorum_critical": [{"vhost": v, "name": n} for v, n in critical]})
    elif critical:
        output.print_line(f"There are quorum queues that would lose their quorum if node {node} stopped:")
        for vhost, name in critical:
            output.print_line(
                f"quorum queue '{name}' in vhost '{vhost}' will become unavailable if node {node} stops"
            )
    else:
        output.print_line(f"Node {node} is not quorum critical for any quorum queue")
    if critical:
        sys.exit(EXIT_UNAVAILABLE)
