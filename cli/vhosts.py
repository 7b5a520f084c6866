"""`quorumq vhosts`: list, add and delete virtual hosts (administrators)."""

import click

from cli import output
from cli.command_group import Settings, pass_settings


@click.group("vhosts")
def vhosts_group() -> None:
    """Virtual hosts: each its own namespace of queues, exchanges, bindings, policies and permissions."""


@vhosts_group.command("list")
@pass_settings
def list_vhosts(settings: Settings) -> None:
    """The vhosts the caller holds permissions in (every vhost, for an administrator)."""
    with settings.connect() as client:
        vhosts = client.vhosts()
    if settings.formatter == "json":
        output.print_json(vhosts)
        return
    output.print_table(
        ["name", "description", "tags"], ([v["name"], v["description"], ",".join(v["tags"])] for v in vhosts)
    )


@vhosts_group.command("add")
@click.argument("name")
@click.option("--description", default="", help="What the vhost is for.")
@click.option("--tag", "tags", multiple=True, help="A tag of the vhost; repeatable.")
@pass_settings
def add_vhost(settings: Settings, name: str, description: str, tags: tuple[str, ...]) -> None:
    """Create vhost NAME (or update its description and tags)."""
    with settings.connect() as client:
        created = client.declare_vhost(name, description=description, tags=tags)
    output.print_line(f"vhost '{name}' {'created' if created else 'updated'}")


@vhosts_group.command("delete")
@click.argument("name")
@pass_settings
def delete_vhost(settings: Settings, name: str) -> None:
    """Delete vhost NAME with its exchanges, bindings, policies and permissions (refused while it holds
    a queue: delete those first)."""
    with settings.connect() as client:
        client.delete_vhost(name)
    output.print_line(f"vhost '{name}' deleted")
