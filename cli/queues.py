"""The `quorumq-queues` command: replica management in the style of `rabbitmq-queues`."""

from importlib.metadata import version

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version("quorumq"), prog_name="quorumq-queues")
def cli() -> None:
    """Manage quorum queue replicas (add_member, delete_member, grow, shrink, rebalance)."""
