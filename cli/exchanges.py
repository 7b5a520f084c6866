"""`quorumq exchanges declare|delete|list` and `quorumq bindings add|remove|list`: RabbitMQ's exchanges and
the bindings that route from them (rabbitmqadmin's `declare exchange` and `declare binding`), in the
virtual host `/`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args

import click

from cli import output
from cli.command_group import Settings, pass_settings
from cli.main import parse_pairs
from quorumq import ExchangeType

EXCHANGE_COLUMNS = ("name", "type", "durable", "auto_delete", "internal", "arguments")
BINDING_COLUMNS = ("source", "destination", "destination_type", "routing_key", "arguments")
ARGUMENT = click.option(
    "--arg",
    "pairs",
    multiple=True,
    metavar="KEY=VALUE",
    help="An argument (its value JSON when it parses); repeatable.",
)


@click.group("exchanges")
def exchanges_group() -> None:
    """Manage exchanges: a publish through one (`quorumq publish --exchange`) reaches the queues its
    bindings route it to."""


@exchanges_group.command("declare")
@click.argument("name")
@click.option(
    "--type", "kind", type=click.Choice(get_args(ExchangeType)), required=True, help="How it routes."
)
@click.option(
    "--durable/--no-durable",
    default=True,
    show_default=True,
    help="Kept for AMQP clients that declare it: every exchange is replicated.",
)
@click.option("--auto-delete", is_flag=True, help="Deleted once its last binding as a source is.")
@click.option("--internal", is_flag=True, help="Takes publishes only from other exchanges.")
@click.option("--alternate-exchange", metavar="NAME", help="Where what it cannot route goes.")
@ARGUMENT
@pass_settings
def declare_exchange(
    settings: Settings,
    name: str,
    kind: ExchangeType,
    durable: bool,
    auto_delete: bool,
    internal: bool,
    alternate_exchange: str | None,
    pairs: tuple[str, ...],
) -> None:
    """Declare exchange NAME (nothing changes when one of the same definition exists)."""
    arguments = parse_pairs(pairs, "--arg")
    if alternate_exchange is not None:
        arguments["alternate-exchange"] = alternate_exchange
    flags = {"durable": durable, "auto_delete": auto_delete, "internal": internal}
    with settings.connect() as client:
        created = client.declare_exchange(name, kind, arguments=arguments, **flags)
    if settings.formatter == "json":
        output.print_json(
            {"exchange": name, "created": created, "type": kind, **flags, "arguments": arguments}
        )
    else:
        output.print_line(f"exchange '{name}' {'declared' if created else 'already exists'}")


@exchanges_group.command("delete")
@click.argument("name")
@click.option("--if-unused", is_flag=True, help="Only delete NAME if it is the source of no binding.")
@pass_settings
def delete_exchange(settings: Settings, name: str, if_unused: bool) -> None:
    """Delete exchange NAME and every binding from or to it."""
    with settings.connect() as client:
        client.delete_exchange(name, if_unused=if_unused)
    if settings.formatter == "json":
        output.print_json({"exchange": name, "deleted": True})
    else:
        output.print_line(f"exchange '{name}' deleted")


@exchanges_group.command("list")
@pass_settings
def list_exchanges(settings: Settings) -> None:
    """Every exchange: the default one (named ''), the built-in amq.* ones and the declared ones."""
    with settings.connect() as client:
        exchanges = client.exchanges()
    _print(settings, exchanges, EXCHANGE_COLUMNS)


@click.group("bindings")
def bindings_group() -> None:
    """Manage bindings: which queues (or exchanges) an exchange routes a message to, by its routing key
    (or, for a headers exchange, its headers)."""


def _binding(command: Callable[..., Any]) -> Callable[..., Any]:
    """The arguments and options that name a binding."""
    for decorator in reversed(
        (
            click.argument("exchange"),
            click.argument("destination"),
            click.option("-k", "--routing-key", default="", metavar="KEY", help="The routing key."),
            click.option(
                "--exchange-destination",
                is_flag=True,
                help="DESTINATION is an exchange, not a queue.",
            ),
            ARGUMENT,
        )
    ):
        command = decorator(command)
    return command


@bindings_group.command("add")
@_binding
@pass_settings
def add_binding(
    settings: Settings,
    exchange: str,
    destination: str,
    routing_key: str,
    exchange_destination: bool,
    pairs: tuple[str, ...],
) -> None:
    """Bind EXCHANGE to the queue DESTINATION (an exchange with --exchange-destination); a headers
    binding's tests are --arg values, with x-match=all|any."""
    arguments = parse_pairs(pairs, "--arg")
    with settings.connect() as client:
        bind = client.bind_exchange if exchange_destination else client.bind
        binding = bind(exchange, destination, routing_key, arguments)
    if settings.formatter == "json":
        output.print_json(binding)
    else:
        output.print_line(f"{_described(exchange, destination, exchange_destination, routing_key)} added")


@bindings_group.command("remove")
@_binding
@pass_settings
def remove_binding(
    settings: Settings,
    exchange: str,
    destination: str,
    routing_key: str,
    exchange_destination: bool,
    pairs: tuple[str, ...],
) -> None:
    """Remove the binding of EXCHANGE to DESTINATION with this routing key and these arguments."""
    arguments = parse_pairs(pairs, "--arg")
    with settings.connect() as client:
        unbind = client.unbind_exchange if exchange_destination else client.unbind
        unbind(exchange, destination, routing_key, arguments)
    if settings.formatter == "json":
        kind = "exchange" if exchange_destination else "queue"
        output.print_json(
            {
                "source": exchange,
                "destination": destination,
                "destination_type": kind,
                "routing_key": routing_key,
                "arguments": arguments,
                "removed": True,
            }
        )
    else:
        output.print_line(f"{_described(exchange, destination, exchange_destination, routing_key)} removed")


def _described(exchange: str, destination: str, to_exchange: bool, routing_key: str) -> str:
    kind = "exchange" if to_exchange else "queue"
    return f"binding of exchange '{exchange}' to {kind} '{destination}' (routing key '{routing_key}')"


@bindings_group.command("list")
@click.option("--source", metavar="EXCHANGE", help="Only the bindings of this exchange.")
@pass_settings
def list_bindings(settings: Settings, source: str | None) -> None:
    """Every binding: its source exchange, destination, routing key and arguments."""
    with settings.connect() as client:
        bindings = client.bindings(source=source)
    _print(settings, bindings, BINDING_COLUMNS)


def _print(settings: Settings, listed: list[dict[str, Any]], columns: tuple[str, ...]) -> None:
    if settings.formatter == "json":
        output.print_json(listed)
    else:
        output.print_table(columns, ([item.get(column) for column in columns] for item in listed))
