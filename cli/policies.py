"""`quorumq policies set|clear|list`: RabbitMQ-style policies (needs an administrator)."""

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


@policies_group.command("set")
@click.argument("name")
@click.argument("pattern")
@click.argument("definition")
@click.option("--priority", type=int, default=0, show_default=True, help="The highest matching one applies.")
@pass_settings
def set_policy(settings: Settings, name: str, pattern: str, definition: str, priority: int) -> None:
    """Create or replace policy NAME for the queues whose name PATTERN matches (a regular expression, RE2
    syntax, matched anywhere in the name as RabbitMQ does: '^orders\\.' for a prefix), applying
    DEFINITION, a JSON object of policy keys such as '{"max-length": 1000, "delivery-limit": 5}'.

    Where a queue declared an argument too, its own value wins, except for the limits (max-length,
    max-length-bytes, message-ttl, expires, delivery-limit, max-unacked), where the stricter wins."""
    with settings.connect() as client:
        created = client.set_policy(name, pattern, _definition(definition), priority=priority)
    output.print_line(f"policy '{name}' {'created' if created else 'replaced'}")


@policies_group.command("clear")
@click.argument("name")
@pass_settings
def clear_policy(settings: Settings, name: str) -> None:
    """Remove policy NAME: its queues return to their declared arguments (or another matching policy)."""
    with settings.connect() as client:
        client.clear_policy(name)
    output.print_line(f"policy '{name}' cleared")


@policies_group.command("list")
@pass_settings
def list_policies(settings: Settings) -> None:
    """Every policy with its pattern, priority and definition."""
    with settings.connect() as client:
        policies = client.policies()
    if settings.formatter == "json":
        output.print_json(policies)
        return
    rows = [[p["name"], p["pattern"], str(p["priority"]), json.dumps(p["definition"])] for p in policies]
    output.print_table(["name", "pattern", "priority", "definition"], rows)
