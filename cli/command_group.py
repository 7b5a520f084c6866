"""What both CLIs share: the global options (accepted before or after the command, as RabbitMQ's CLIs
take them), the settings they make, and how errors become one line on stderr and an exit code.

Exit codes are RabbitMQ's CLI ones (sysexits.h): 64 a usage error, 69 no node reachable, and a CLI's own
code for a refusal by the cluster (`QuorumqGroup.server_error_exit`).
"""

from __future__ import annotations

import os
import ssl
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import click

from cli import output
from quorumq import NoNodeAvailableError, QuorumqError, SyncClient

DEFAULT_NODE = "127.0.0.1:8080"
NODES_ENV = "QUORUMQ_NODES"
EXIT_SERVER_ERROR = 1
EXIT_USAGE = 64  # EX_USAGE: a command, option or argument that is not right
EXIT_UNAVAILABLE = 69  # EX_UNAVAILABLE: no node could be reached


@dataclass(frozen=True)
class Settings:
    """The global options, handed to every command."""

    nodes: tuple[str, ...]
    formatter: str
    timeout: float
    user: str | None = None
    password: str | None = None
    token: str | None = None
    ca_file: str | None = None
    vhost: str = "/"

    def connect(self, vhost: str | None = None) -> SyncClient:
        """A client for the configured nodes (a bad address is a usage error), naming the queues of
        `vhost` (default: --vhost's); credentials and the CA file not given here come from
        QUORUMQ_USER/PASSWORD/TOKEN/CA_FILE (quorumq.auth)."""
        auth = (self.user, self.password or "") if self.user else None
        tls = ssl.create_default_context(cafile=self.ca_file) if self.ca_file else None
        try:
            return SyncClient(
                self.nodes,
                timeout=self.timeout,
                auth=auth,
                token=self.token,
                tls=tls,
                vhost=self.vhost if vhost is None else vhost,
            )
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--node") from exc


pass_settings = click.make_pass_decorator(Settings)


class QuorumqGroup(click.Group):
    """A click group whose global options may also follow the command, whose usage errors exit 64, and
    which reports client errors as one line on stderr with a meaningful exit code."""

    server_error_exit = EXIT_SERVER_ERROR
    show_http_status = True

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, self._globals_first(args))
        except click.UsageError as exc:
            setattr(exc, "exit_code", EXIT_USAGE)  # noqa: B010 - click declares it a class variable
            raise

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            setattr(exc, "exit_code", EXIT_USAGE)  # noqa: B010 - click declares it a class variable
            raise
        except NoNodeAvailableError as exc:
            click.echo(f"Error: no quorumq node reachable (tried {', '.join(exc.nodes)})", err=True)
            sys.exit(EXIT_UNAVAILABLE)
        except QuorumqError as exc:
            status = f", HTTP {exc.status}" if exc.status and self.show_http_status else ""
            click.echo(f"Error: {exc.reason or exc.code} ({exc.code}{status})", err=True)
            sys.exit(self.server_error_exit)

    def _globals_first(self, args: Sequence[str]) -> list[str]:
        """`args` with this group's options that follow the command moved before it, unless the command
        (or the subcommand chosen below it) has an option of the same name; a value of the command's own
        options stays with it, and everything after `--` stays."""
        takes_value = _value_taking(param for param in self.params if not param.is_eager)
        position = _command_position(args, takes_value)
        command = self.commands.get(args[position]) if position < len(args) else None
        if command is None:
            return list(args)
        own = _value_taking(command.params)
        moved: list[str] = []
        rest: list[str] = []
        index = position + 1
        while index < len(args):
            token = args[index]
            name, has_value = token.split("=", 1)[0], "=" in token
            if token == "--":
                rest.extend(args[index:])
                break
            mine = name in own
            width = 2 if (own if mine else takes_value).get(name) and not has_value else 1
            if not mine and name in takes_value:
                moved.extend(args[index : index + width])
            else:
                rest.extend(args[index : index + width])
                if isinstance(command, click.Group) and token in command.commands:
                    command = command.commands[token]  # the path goes on: its options are the command's
                    own |= _value_taking(command.params)
            index += width
        return [*args[:position], *moved, args[position], *rest]


def _command_position(args: Sequence[str], takes_value: dict[str, bool]) -> int:
    """Where the command's name is among `args` (their length when there is none)."""
    index = 0
    while index < len(args) and args[index].startswith("-") and args[index] != "--":
        token = args[index]
        index += 2 if takes_value.get(token) and "=" not in token else 1
    return index


def _value_taking(params: Iterable[click.Parameter]) -> dict[str, bool]:
    """Each option name of `params`, and whether the option takes a value."""
    return {
        name: not (param.is_flag or param.count)
        for param in params
        if isinstance(param, click.Option) and param.expose_value
        for name in (*param.opts, *param.secondary_opts)
    }


def node_list(given: Sequence[str]) -> tuple[str, ...]:
    """Nodes from --node (each may hold a comma-separated list), else $QUORUMQ_NODES, else the default."""
    entries = list(given) or [os.environ.get(NODES_ENV, "")]
    nodes = tuple(node.strip() for entry in entries for node in entry.split(",") if node.strip())
    return nodes or (DEFAULT_NODE,)


def global_options(what: str, timeout: Callable[[Any], Any]) -> Callable[[Callable[..., Any]], Any]:
    """The options every command of a CLI takes (`what` starts --node's help, `timeout` is the CLI's
    timeout option); the group's callback gets them as keywords and makes `Settings` with `settings`."""
    options = [
        click.option(
            "-n",
            "--node",
            "nodes",
            multiple=True,
            metavar="HOST:PORT",
            help=f"{what}; repeatable (default ${NODES_ENV}, comma-separated, or {DEFAULT_NODE}).",
        ),
        click.option(
            "-f", "--formatter", type=click.Choice(output.FORMATTERS), default="table", show_default=True
        ),
        timeout,
        click.option("-q", "--quiet", is_flag=True, help="Leave out informational messages."),
        click.option("-s", "--silent", is_flag=True, help="As --quiet, and tables without their header."),
        click.option("--user", help="User for HTTP Basic authentication (default $QUORUMQ_USER, or guest)."),
        click.option("--password", help="Password of --user (default $QUORUMQ_PASSWORD)."),
        click.option("--token", help="A bearer token instead of a user (default $QUORUMQ_TOKEN)."),
        click.option(
            "--ca-file", type=click.Path(exists=True, dir_okay=False), help="CA bundle for HTTPS nodes."
        ),
        click.option(
            "-p",
            "--vhost",
            default="/",
            show_default=True,
            help="The virtual host whose queues, exchanges and policies the command names.",
        ),
    ]

    def decorate(function: Callable[..., Any]) -> Any:
        for option in reversed(options):
            function = option(function)
        return function

    return decorate


def settings(ctx: click.Context, nodes: tuple[str, ...], quiet: bool, silent: bool, **given: Any) -> Settings:
    """The settings the global options make, the output's verbosity set from --quiet and --silent."""
    output.set_verbosity(ctx, quiet=quiet, silent=silent)
    return Settings(node_list(nodes), **given)
