"""`quorumq policies set|clear|list [--operator]`: RabbitMQ-style policies and operator policies (needs an
administrator)."""

from __future__ import annotations

import json

import click

from cli import output
from cli.command_group import Settings, pass_settings


@click.group("policies")
def policies_group() -> None:
    """Manage policies: runtime arguments (limits, TTLs, dead-lettering, delivery limit, consumer
    timeout, delayed retry, target group size, backlog controls) for every queue whose name a pattern
    matches, now and declared later."""


def _definition(value: str) -> dict[str, object]:
    try:
        definition = json.loads(value)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not JSON: {exc}") from exc
    if not isinstance(definition, dict):
        raise click.BadParameter("a JSON object, such as '{\"max-length\": 1000}'")
    return definition


OPERATOR = click.option(
    "--operator",
    is_flag=True,
    help="An operator policy (RabbitMQ's set_operator_policy): limits only, applied over the queues' own "
    "and their policy's, the smallest winning.",
)


@policies_group.command("set")
@click.argument("name")
@click.argument("pattern")
@click.argument("definition")
@click.option("--priority", type=int, default=0, show_default=True, help="The highest matching one applies.")
@OPERATOR
@pass_settings
def set_policy(
    settings: Settings, name: str, pattern: str, definition: str, priority: int, operator: bool
) -> None:
    """Create or replace policy NAME for the queues whose name PATTERN matches (a regular expression, RE2
    syntax, matched anywhere in the name as RabbitMQ does: '^orders\\.' for a prefix), applying
    DEFINITION, a JSON object of policy keys such as '{"max-length": 1000, "delivery-limit": 5}'.

    Where a queue declared an argument too, its own value wins, except for the limits (max-length,
    max-length-bytes, message-ttl, expires, delivery-limit, max-unacked), where the stricter wins.
    With --operator, an operator policy: its limits apply over the queue's own and its policy's."""
    with settings.connect() as client:
        created = client.set_policy(
            name, pattern, _definition(definition), priority=priority, operator=operator
        )
    output.print_line(f"{_kind(operator)} '{name}' {'created' if created else 'replaced'}")


@policies_group.command("clear")
@click.argument("name")
@OPERATOR
@pass_settings
def clear_policy(settings: Settings, name: str, operator: bool) -> None:
    """Remove policy NAME: its queues return to their declared arguments (or another matching policy)."""
    with settings.connect() as client:
        client.clear_policy(name, operator=operator)
    output.print_line(f"{_kind(operator)} '{name}' cleared")


def _kind(operator: bool) -> str:
    return "operator policy" if operator else "policy"


@policies_group.command("list")
@OPERATOR
@pass_settings
def list_policies(settings: Settings, operator: bool) -> None:
    """Every policy (or operator policy) with its pattern, priority and definition."""
    with settings.connect() as client:
        policies = client.policies(operator=operator)
    if settings.formatter == "json":
        output.print_json(policies)
        return
    rows = [
        [p.get("vhost", "/"), p["name"], p["pattern"], str(p["priority"]), json.dumps(p["definition"])]
        for p in policies
    ]
    output.print_table(["vhost", "name", "pattern", "priority", "definition"], rows)
