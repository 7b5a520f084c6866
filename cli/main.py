"""The `quorumq` command: run a node, run a local cluster, and talk to queues."""

import contextlib
import itertools
import json
import sys
import time
from collections.abc import Sequence
from importlib.metadata import version
from typing import Any, BinaryIO, Literal

import click

from cli import output
from cli.command_group import (
    EXIT_SERVER_ERROR,
    QuorumqGroup,
    Settings,
    global_options,
    pass_settings,
    settings,
)
from quorumq import Message, NotFoundError, QuorumqError, SyncClient


@click.group(cls=QuorumqGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version("quorumq"), prog_name="quorumq")
@global_options(
    "A node's HTTP address",
    click.option(
        "--request-timeout",
        "timeout",
        type=click.FloatRange(min=0.1),
        default=10.0,
        show_default=True,
        help="Seconds each request may take, retries included.",
    ),
)
@click.pass_context
def cli(ctx: click.Context, **given: Any) -> None:
    """quorumq: Raft-replicated quorum queues with an HTTP API.

    Global options may come before or after the command. Exit codes: 0 done, 1 the cluster refused,
    64 usage error, 69 no node reachable."""
    ctx.obj = settings(ctx, **given)


def parse_value(text: str) -> Any:
    """A command-line value: JSON when it parses (10, true, [1]), else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_pairs(pairs: Sequence[str], option: str) -> dict[str, Any]:
    """KEY=VALUE options as a dict, values parsed by parse_value."""
    parsed: dict[str, Any] = {}
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key.strip():
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint=option)
        parsed[key.strip()] = parse_value(value)
    return parsed


def queue_arguments(arguments_json: str | None, pairs: Sequence[str]) -> dict[str, Any]:
    """The declare arguments: --arguments JSON object, overridden by each --arg KEY=VALUE."""
    arguments: dict[str, Any] = {}
    if arguments_json is not None:
        try:
            arguments = json.loads(arguments_json)
        except ValueError as exc:
            raise click.BadParameter(f"not valid JSON: {exc}", param_hint="--arguments") from exc
        if not isinstance(arguments, dict):
            raise click.BadParameter("must be a JSON object", param_hint="--arguments")
    return arguments | parse_pairs(pairs, "--arg")


@cli.command()
@click.argument("queue")
@click.option("--arg", "pairs", multiple=True, metavar="KEY=VALUE", help="A queue argument; repeatable.")
@click.option("--arguments", "arguments_json", metavar="JSON", help="Queue arguments as a JSON object.")
@pass_settings
def declare(settings: Settings, queue: str, pairs: tuple[str, ...], arguments_json: str | None) -> None:
    """Declare QUEUE (values of --arg are JSON when they parse: x-max-length=10 is a number)."""
    arguments = queue_arguments(arguments_json, pairs)
    with settings.connect() as client:
        created = client.declare(queue, arguments)
    if settings.formatter == "json":
        output.print_json({"queue": queue, "created": created, "arguments": arguments})
    else:
        output.print_line(f"queue '{queue}' {'declared' if created else 'already exists'}")


def body_from_line(line: bytes) -> bytes | str:
    """A message body read from a file line: text when it is UTF-8, else the raw bytes."""
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return line


def synthetic_body(index: int, size: int | None) -> str:
    """A generated ASCII body `message N`, padded or cut to exactly `size` bytes when a size is given."""
    text = f"message {index}"
    return text if size is None else f"{text} {'.' * size}"[:size]


def messages_to_publish(
    bodies: Sequence[str],
    source: BinaryIO | None,
    count: int | None,
    size: int | None,
    headers: dict[str, Any],
    delay_ms: int | None = None,
    priority: int = 0,
    message_id: str | None = None,
    group: str | None = None,
) -> list[Message]:
    """The messages `publish` sends: given bodies (cycled to --count) or generated ones, each delayed by
    `delay_ms` when given, each at `priority`, each with `message_id` and in `group` when given."""
    given: list[bytes | str] = list(bodies)
    if source is not None:
        given.extend(body_from_line(line) for line in source.read().splitlines())
    if given and size is not None:
        raise click.UsageError("--size generates bodies; do not combine it with BODY or --file")
    if not given and count is None and size is None:
        raise click.UsageError("nothing to publish: give BODY arguments, --file, --count or --size")
    if given:
        chosen = list(itertools.islice(itertools.cycle(given), count or len(given)))
    else:
        chosen = [synthetic_body(index, size) for index in range(1, (count or 1) + 1)]
    return [
        Message(
            body,
            headers=headers or None,
            delay_ms=delay_ms,
            priority=priority,
            message_id=message_id,
            group=group,
        )
        for body in chosen
    ]


def describe_ids(ids: Sequence[int]) -> str:
    """Ids as a short text: a range when they are consecutive, else a list."""
    if len(ids) > 1 and list(ids) == list(range(ids[0], ids[0] + len(ids))):
        return f"{ids[0]}..{ids[-1]}"
    return ", ".join(map(str, ids))


@cli.command()
@click.argument("queue", required=False)
@click.argument("bodies", nargs=-1)
@click.option(
    "-e",
    "--exchange",
    metavar="NAME",
    help="Publish through this exchange ('' the default one) instead of to QUEUE: every argument is a BODY.",
)
@click.option("-k", "--routing-key", metavar="KEY", help="With --exchange: the messages' routing key.")
@click.option(
    "--mandatory",
    is_flag=True,
    help="With --exchange: exit 1 when some messages reached no queue (AMQP's mandatory flag).",
)
@click.option("--count", type=click.IntRange(min=1), help="How many messages (given bodies are cycled).")
@click.option("--size", type=click.IntRange(min=0), help="Generate bodies of this many bytes.")
@click.option("--header", "header_pairs", multiple=True, metavar="KEY=VALUE", help="A header; repeatable.")
@click.option(
    "--delay",
    type=click.IntRange(min=1),
    metavar="MS",
    help="Each message waits this long in the queue before it is ready (delayed delivery).",
)
@click.option(
    "--priority",
    type=click.IntRange(min=0, max=255),
    default=0,
    help="Each message's priority: the queue serves higher ones first (above its top, 31 or "
    "x-max-priority, taken as the top).",
)
@click.option(
    "--message-id",
    metavar="ID",
    help="Each message's id (AMQP's message_id): a queue with x-dedupe-window enqueues a message whose id "
    "it took within the window only once, and confirms the first one's id.",
)
@click.option(
    "--group",
    metavar="GROUP",
    help="Each message's group (1 to 255 bytes): a queue with x-message-groups hands out one message of a "
    "group at a time, in the order published.",
)
@click.option("--file", "source", type=click.File("rb"), help="Publish each line of this file ('-': stdin).")
@click.option(
    "--batch", type=click.IntRange(min=1), default=100, show_default=True, help="Messages a request."
)
@click.option(
    "--window",
    type=click.IntRange(min=1),
    default=16,
    show_default=True,
    help="Requests in flight to QUEUE (through an exchange, one at a time).",
)
@click.option(
    "--wait",
    type=click.IntRange(min=0, max=30000),
    default=0,
    metavar="MS",
    help="How long a publish to a full reject-publish queue waits for room before it is refused.",
)
@pass_settings
def publish(
    settings: Settings,
    queue: str | None,
    bodies: tuple[str, ...],
    exchange: str | None,
    routing_key: str | None,
    mandatory: bool,
    count: int | None,
    size: int | None,
    header_pairs: tuple[str, ...],
    delay: int | None,
    priority: int,
    message_id: str | None,
    group: str | None,
    source: BinaryIO | None,
    batch: int,
    window: int,
    wait: int,
) -> None:
    """Publish messages to QUEUE, or through an exchange with --exchange, and print the ids the cluster
    confirmed."""
    if exchange is not None:
        bodies = bodies if queue is None else (queue, *bodies)
    elif queue is None:
        raise click.UsageError("give the QUEUE to publish to, or --exchange")
    elif routing_key is not None or mandatory:
        raise click.UsageError("--routing-key and --mandatory go with --exchange")
    headers = parse_pairs(header_pairs, "--header")
    messages = messages_to_publish(bodies, source, count, size, headers, delay, priority, message_id, group)
    if exchange is not None:
        publish_through(settings, exchange, routing_key or "", messages, batch, wait, mandatory)
    elif queue is not None:
        publish_to(settings, queue, messages, batch, window, wait)


def publish_to(
    settings: Settings, queue: str, messages: Sequence[Message], batch: int, window: int, wait_ms: int
) -> None:
    """Publish `messages` to `queue` through a pipelined publisher and print the ids it confirmed."""
    with settings.connect() as client, output.progress(f"publishing to '{queue}'", len(messages)) as bar:
        ids = client.publish_all(
            queue, messages, window=window, batch=batch, sent=bar.advance, wait_ms=wait_ms
        )
    if settings.formatter == "json":
        output.print_json({"queue": queue, "published": len(ids), "ids": ids})
    else:
        output.print_line(f"published {len(ids)} message(s) to '{queue}', confirmed ids {describe_ids(ids)}")


def publish_through(
    settings: Settings,
    exchange: str,
    routing_key: str,
    messages: Sequence[Message],
    batch: int,
    wait_ms: int,
    mandatory: bool,
) -> None:
    """Publish `messages` through `exchange`, a request of `batch` at a time, and print what each queue
    confirmed; with `mandatory`, exit 1 when some reached no queue."""
    named = f"exchange '{exchange}'" if exchange else "the default exchange"
    routed: dict[str, list[int]] = {}
    unroutable: list[int] = []
    with settings.connect() as client, output.progress(f"publishing through {named}", len(messages)) as bar:
        for start in range(0, len(messages), batch):
            chunk = messages[start : start + batch]
            answer = client.publish_to_exchange(
                exchange, chunk, routing_key, mandatory=mandatory, wait_ms=wait_ms
            )
            for queue, ids in answer.routed.items():
                routed.setdefault(queue, []).extend(ids)
            unroutable.extend(start + position for position in answer.unroutable)
            bar.advance(len(chunk))
    if settings.formatter == "json":
        output.print_json(
            {
                "exchange": exchange,
                "routing_key": routing_key,
                "published": len(messages),
                "routed": routed,
                "unroutable": unroutable,
            }
        )
    else:
        output.print_line(
            f"published {len(messages)} message(s) through {named} (routing key '{routing_key}')"
        )
        for queue, ids in routed.items():
            output.print_line(f"  to '{queue}': confirmed ids {describe_ids(ids)}")
        if unroutable:
            output.print_line(f"  {len(unroutable)} message(s) reached no queue and were dropped")
    if mandatory and unroutable:
        click.echo(f"Error: {len(unroutable)} message(s) reached no queue (unroutable)", err=True)
        sys.exit(EXIT_SERVER_ERROR)


@cli.command()
@click.argument("queue")
@click.option("--count", type=click.IntRange(min=1), help="Stop after this many messages.")
@click.option("--prefetch", type=click.IntRange(min=1), default=100, show_default=True)
@click.option(
    "--no-ack",
    is_flag=True,
    help="AMQP's no-ack: the server settles each delivery as it hands it out (at most once).",
)
@click.option("--leave-unacked", is_flag=True, help="Settle nothing: messages return when the consumer ends.")
@click.option("--nack", is_flag=True, help="Reject messages back to the queue instead of acking them.")
@click.option(
    "--plain-return",
    is_flag=True,
    help="With --nack: a plain return, not counted toward the queue's delivery limit.",
)
@click.option(
    "--nack-delay",
    type=click.IntRange(min=0),
    metavar="MS",
    help="With --nack: the messages wait this long before they are ready again.",
)
@click.option(
    "--reject",
    metavar="REASON",
    help="Dead-letter messages (nack without requeue) with this reason, kept in x-death as reason-text.",
)
@click.option(
    "--timeout", type=click.FloatRange(min=0), help="Stop after this many seconds without a message."
)
@click.option(
    "--consumer-timeout",
    type=click.IntRange(min=1),
    metavar="MS",
    help="The consumer's own timeout: how long it may hold a delivery untouched (default: the queue's, "
    "else the server's).",
)
@click.option(
    "--work",
    type=click.FloatRange(min=0),
    default=0,
    metavar="SECONDS",
    help="Hold each batch this long before settling it (slow work), touching it meanwhile.",
)
@click.option("--no-touch", is_flag=True, help="With --work: do not touch (the consumer timeout may end it).")
@pass_settings
def consume(
    settings: Settings,
    queue: str,
    count: int | None,
    prefetch: int,
    no_ack: bool,
    leave_unacked: bool,
    nack: bool,
    plain_return: bool,
    nack_delay: int | None,
    reject: str | None,
    timeout: float | None,
    consumer_timeout: int | None,
    work: float,
    no_touch: bool,
) -> None:
    """Consume from QUEUE, printing each delivery and acking it (or nacking with --nack, dead-lettering
    with --reject, settled by the server with --no-ack), after --work seconds of touched hold when
    given."""
    if sum((no_ack, leave_unacked, nack, reject is not None)) > 1:
        raise click.UsageError("--no-ack, --leave-unacked, --nack and --reject exclude each other")
    if (plain_return or nack_delay is not None) and not nack:
        raise click.UsageError("--plain-return and --nack-delay go with --nack")
    if no_touch and not work:
        raise click.UsageError("--no-touch goes with --work")
    if no_ack and work:
        raise click.UsageError("--work holds deliveries: with --no-ack they are settled already")
    received = 0
    with (
        settings.connect() as client,
        output.progress(f"consuming from '{queue}'", count, beside_output=True) as bar,
    ):
        tag = client.consume(queue, prefetch=prefetch, timeout_ms=consumer_timeout, auto_ack=no_ack)
        try:
            idle_since = time.monotonic()
            while count is None or received < count:
                idle_left = None if timeout is None else timeout - (time.monotonic() - idle_since)
                if idle_left is not None and idle_left <= 0:
                    break
                wanted = prefetch if count is None else min(prefetch, count - received)
                wait = 1.0 if idle_left is None else min(1.0, idle_left)
                deliveries = client.deliveries(queue, tag, max=wanted, wait=wait)
                if not deliveries:
                    continue
                for delivery in deliveries:
                    output.stream_delivery(delivery, settings.formatter)
                ids = [delivery.id for delivery in deliveries]
                hold_while_working(client, queue, tag, ids, work, touch=not no_touch)
                if nack:
                    client.nack(queue, tag, ids, requeue=True, failed=not plain_return, delay_ms=nack_delay)
                elif reject is not None:
                    client.nack(queue, tag, ids, requeue=False, reason=reject)
                elif not (no_ack or leave_unacked):
                    client.ack(queue, tag, ids)
                received += len(deliveries)
                bar.advance(len(deliveries))
                idle_since = time.monotonic()
        finally:
            with contextlib.suppress(NotFoundError):
                client.cancel(queue, tag)
    if settings.formatter == "table":
        settled = (
            "left unacked" if leave_unacked
            else "settled on delivery" if no_ack
            else "nacked" if nack
            else "rejected" if reject
            else "acked"
        )  # fmt: skip
        output.print_line(f"{received} message(s) consumed from '{queue}', {settled}")


def hold_while_working(
    client: SyncClient, queue: str, tag: str, ids: list[int], seconds: float, *, touch: bool
) -> None:
    """Stand in for `seconds` of work on the deliveries `ids` of consumer `tag`, touching them every
    half hold (the first touch at once: its answer tells the hold) unless `touch` is false or the
    server refuses touches (the work goes on; the settle after it tells what became of them)."""
    end = time.monotonic() + seconds
    interval = 0.0
    while (left := end - time.monotonic()) > 0:
        time.sleep(min(left, interval) if touch else left)  # the work this command stands in for
        if touch and time.monotonic() < end:
            try:
                interval = client.touch(queue, tag, ids) / 2000
            except QuorumqError as exc:
                if not 400 <= exc.status < 500:
                    raise
                click.echo(f"Warning: touching stopped: {exc.reason or exc.code} ({exc.code})", err=True)
                touch = False


@cli.command()
@click.argument("queue")
@click.option("--count", type=click.IntRange(min=1), default=1, show_default=True)
@click.option(
    "--ack",
    "ack_mode",
    type=click.Choice(["auto", "manual"]),
    default="manual",
    show_default=True,
    help="manual (as the API and the client) holds the messages until `quorumq ack` or `nack` settles "
    "them, or the consumer timeout returns them; auto settles them as they are taken.",
)
@pass_settings
def get(settings: Settings, queue: str, count: int, ack_mode: Literal["auto", "manual"]) -> None:
    """Take up to --count ready messages from QUEUE at once (basic.get)."""
    with settings.connect() as client:
        deliveries = client.get(queue, count=count, ack=ack_mode)
    output.print_deliveries(deliveries, settings.formatter)


message_ids = click.argument("ids", nargs=-1, required=True, type=click.IntRange(min=0))


@cli.command()
@click.argument("queue")
@message_ids
@pass_settings
def ack(settings: Settings, queue: str, ids: tuple[int, ...]) -> None:
    """Settle messages of QUEUE that `get --ack manual` took (basic.ack)."""
    with settings.connect() as client:
        warning = client.ack_got(queue, ids)
    _settled(settings, queue, ids, "acked", warning)


@cli.command()
@click.argument("queue")
@message_ids
@click.option(
    "--reject",
    metavar="REASON",
    help="Dead-letter them (or drop them without a dead-letter target), the reason kept in x-death.",
)
@click.option("--plain-return", is_flag=True, help="Not counted toward the queue's delivery limit.")
@click.option("--delay", type=click.IntRange(min=0), metavar="MS", help="Wait this long before ready again.")
@pass_settings
def nack(
    settings: Settings,
    queue: str,
    ids: tuple[int, ...],
    reject: str | None,
    plain_return: bool,
    delay: int | None,
) -> None:
    """Return messages of QUEUE that `get --ack manual` took to the queue (basic.nack with requeue), or
    dead-letter them with --reject."""
    if reject is not None and (plain_return or delay is not None):
        raise click.UsageError("--plain-return and --delay return messages: not with --reject")
    with settings.connect() as client:
        if reject is not None:
            warning = client.nack_got(queue, ids, requeue=False, reason=reject or None)
        else:
            warning = client.nack_got(queue, ids, requeue=True, failed=not plain_return, delay_ms=delay)
    _settled(settings, queue, ids, "rejected" if reject is not None else "returned", warning)


def _settled(settings: Settings, queue: str, ids: Sequence[int], what: str, warning: str | None) -> None:
    """Report a settle of `ids`; the server's warning (ids it did not hold) on stderr."""
    if warning is not None:
        click.echo(f"Warning: {warning}", err=True)
    if settings.formatter == "json":
        output.print_json({"queue": queue, what: list(ids), "warning": warning})
    else:
        output.print_line(f"{len(ids)} message(s) of '{queue}' {what}: {describe_ids(sorted(ids))}")


QUEUE_COLUMNS = {  # table column: field of the queue's stats
    "vhost": "vhost",
    "name": "name",
    "messages": "messages",
    "ready": "messages_ready",
    "unacked": "messages_unacknowledged",
    "consumers": "consumers",
    "leader": "leader",
    "members": "members",
}


@cli.command()
@pass_settings
def queues(settings: Settings) -> None:
    """List the queues of --vhost with their message counts, consumers, leader and members."""
    with settings.connect() as client:
        listed = [q for q in client.queues() if q.get("vhost", "/") == settings.vhost]
    if settings.formatter == "json":
        output.print_json(listed)
    else:
        rows = ([queue.get(field) for field in QUEUE_COLUMNS.values()] for queue in listed)
        output.print_table(list(QUEUE_COLUMNS), rows)


NODE_COLUMNS = ("name", "http", "raft", "status")
ALARM_FIELDS = (("disk_free_alarm", "disk"), ("mem_alarm", "memory"))


def node_alarms(node: dict[str, Any]) -> str:
    """The resource alarms a node reported (`none`), or `unknown` for one that did not answer."""
    if not node.get("running"):
        return "unknown"
    return ", ".join(resource for field, resource in ALARM_FIELDS if node.get(field)) or "none"


@cli.command()
@pass_settings
def status(settings: Settings) -> None:
    """Show the cluster's nodes and the health of the node that answers."""
    with settings.connect() as client:
        nodes = client.nodes()
        health = client.health()
    if settings.formatter == "json":
        output.print_json({"nodes": nodes, "health": health})
        return
    rows = ([*(node.get(field) for field in NODE_COLUMNS), node_alarms(node)] for node in nodes)
    output.print_table((*NODE_COLUMNS, "alarms"), rows, "nodes")
    output.print_table(("check", "value"), sorted(health.items()), "health")


@cli.command()
@click.argument("queue")
@click.option("--if-empty", is_flag=True, help="Only delete QUEUE if it has no messages.")
@click.option("--if-unused", is_flag=True, help="Only delete QUEUE if it has no consumers.")
@pass_settings
def delete(settings: Settings, queue: str, if_empty: bool, if_unused: bool) -> None:
    """Delete QUEUE and its messages."""
    with settings.connect() as client:
        client.delete_queue(queue, if_empty=if_empty, if_unused=if_unused)
    if settings.formatter == "json":
        output.print_json({"queue": queue, "deleted": True})
    else:
        output.print_line(f"queue '{queue}' deleted")


@cli.command()
@click.argument("queue")
@pass_settings
def purge(settings: Settings, queue: str) -> None:
    """Remove every ready message of QUEUE."""
    with settings.connect() as client:
        purged = client.purge(queue)
    if settings.formatter == "json":
        output.print_json({"queue": queue, "purged": purged})
    else:
        output.print_line(f"purged {purged} message(s) from '{queue}'")
