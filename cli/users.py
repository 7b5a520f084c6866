"""`quorumq users add|delete|list|set-permissions`: user management (needs an administrator)."""

from __future__ import annotations

import click

from cli import output
from cli.command_group import Settings, pass_settings


@click.group("users")
def users_group() -> None:
    """Manage users and their permissions: configure/write/read regexes that must match the whole queue
    name (unlike RabbitMQ, which searches; write `alice-.*`)."""


@users_group.command("add")
@click.argument("name")
@click.option("--password", prompt=True, hide_input=True, confirmation_prompt=True, help="The new password.")
@click.option(
    "--tag", "tags", multiple=True, type=click.Choice(["administrator", "monitoring"]), help="Repeatable."
)
@pass_settings
def add_user(settings: Settings, name: str, password: str, tags: tuple[str, ...]) -> None:
    """Create user NAME, or change its password and tags."""
    with settings.connect() as client:
        created = client.put_user(name, password, list(tags))
    output.print_line(f"user '{name}' {'created' if created else 'updated'}")


@users_group.command("delete")
@click.argument("name")
@pass_settings
def delete_user(settings: Settings, name: str) -> None:
    """Delete user NAME (never yourself nor the last administrator)."""
    with settings.connect() as client:
        client.delete_user(name)
    output.print_line(f"user '{name}' deleted")


@users_group.command("list")
@pass_settings
def list_users(settings: Settings) -> None:
    """Every user with its tags and permissions."""
    with settings.connect() as client:
        users = client.users()
    if settings.formatter == "json":
        output.print_json(users)
        return
    rows = [
        [u["name"], ",".join(u["tags"]), vhost, given["configure"], given["write"], given["read"]]
        for u in users
        for vhost, given in u.get("vhost_permissions", {"/": u["permissions"]}).items()
    ]
    output.print_table(["name", "tags", "vhost", "configure", "write", "read"], rows)


@users_group.command("set-permissions")
@click.argument("name")
@click.option("--configure", default="", help="Regex of queues NAME may declare, delete, purge, change.")
@click.option("--write", default="", help="Regex of queues NAME may publish to.")
@click.option("--read", default="", help="Regex of queues NAME may consume from, get and ack.")
@pass_settings
def set_permissions(settings: Settings, name: str, configure: str, write: str, read: str) -> None:
    """Set the configure/write/read regexes of user NAME in the vhost of --vhost.

    Each regex (RE2 syntax) must match a whole queue (or exchange) name: 'alice-.*' grants alice-1,
    'alice-' only the queue named alice-; "" grants nothing, ".*" everything."""
    with settings.connect() as client:
        client.set_permissions(name, configure=configure, write=write, read=read)
    output.print_line(f"permissions of '{name}' in vhost '{settings.vhost}' set")
