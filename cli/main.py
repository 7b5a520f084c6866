"""The `quorumq` command: run a node, run a local cluster, and talk to queues."""

from importlib.metadata import version

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version("quorumq"), prog_name="quorumq")
def cli() -> None:
    """quorumq: Raft-replicated quorum queues with an HTTP API."""
