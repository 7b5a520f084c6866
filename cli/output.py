"""Printing command results: tables (rich on a terminal, tab-separated otherwise) with `--formatter table`,
JSON with `--formatter json`."""

import base64
import contextlib
import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from quorumq import Delivery

T = TypeVar("T")
FORMATTERS = ("table", "json")
_PIPE_WIDTH = 200
_VERBOSITY = "quorumq.verbosity"
_NORMAL, _QUIET, _SILENT = 0, 1, 2


def console() -> Console:
    """A rich console on the current stdout (wide when stdout is not a terminal, so tables stay intact)."""
    out = Console(file=sys.stdout, highlight=False)
    if not out.is_terminal:
        out.width = _PIPE_WIDTH
    return out


def print_json(data: Any) -> None:
    """Print `data` as indented JSON."""
    click.echo(json.dumps(data, indent=2, default=str))


def print_json_line(data: Any) -> None:
    """Print `data` as one compact JSON line (for streams)."""
    click.echo(json.dumps(data, separators=(",", ":"), default=str))


def set_verbosity(ctx: click.Context, *, quiet: bool, silent: bool) -> None:
    """What the command run in `ctx` leaves out: informational messages when `quiet`, those and table
    headers when `silent` (RabbitMQ's CLI meanings)."""
    ctx.meta[_VERBOSITY] = _SILENT if silent else _QUIET if quiet else _NORMAL


def _verbosity() -> int:
    ctx = click.get_current_context(silent=True)
    return _NORMAL if ctx is None else int(ctx.meta.get(_VERBOSITY, _NORMAL))


def print_table(columns: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None) -> None:
    """Print a table with the given column headers: a rich table on a terminal, else tab-separated lines
    (as RabbitMQ's CLIs print for programs), `title` an informational line before it."""
    verbosity = _verbosity()
    out = console()
    if out.is_terminal:
        table = Table(*columns, title=title if verbosity == _NORMAL else None, title_justify="left")
        table.show_header = verbosity < _SILENT
        for row in rows:
            table.add_row(*(cell_text(value) for value in row))
        out.print(table)
        return
    if title is not None:
        print_info(title)
    lines = [] if verbosity == _SILENT else [columns]
    lines.extend([cell_text(value) for value in row] for row in rows)
    for cells in lines:
        click.echo("\t".join(_one_field(cell) for cell in cells))


def _one_field(text: str) -> str:
    """A cell as one tab-separated field: its tabs and line breaks become spaces."""
    return text.replace("\t", " ").replace("\r", " ").replace("\n", " ")


@dataclass(frozen=True)
class ProgressBar:
    """A running progress bar: `advance` by steps, `show` how many are done, `describe` what runs now,
    `say` a line above it (on stderr, bar or no bar)."""

    bar: Progress
    task: TaskID

    def advance(self, steps: int) -> None:
        self.bar.advance(self.task, steps)

    def show(self, completed: int) -> None:
        self.bar.update(self.task, completed=completed)

    def describe(self, text: str) -> None:
        self.bar.update(self.task, description=text)

    def say(self, line: str) -> None:
        self.bar.console.print(line, markup=False, highlight=False, soft_wrap=True)


@contextlib.contextmanager
def progress(description: str, total: int | None, *, beside_output: bool = False) -> Iterator[ProgressBar]:
    """A progress bar of `total` steps (a count when None) on stderr while it is a terminal; for a
    command printing as it goes (`beside_output`), only while stdout is not the same screen."""
    shown = Console(stderr=True)
    show = shown.is_terminal and not (beside_output and console().is_terminal)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=shown, disable=not show, transient=True) as bar:
        yield ProgressBar(bar, bar.add_task(description, total=total))


def progressing(items: Sequence[T], description: str) -> Iterator[T]:
    """`items`, one at a time, with a `progress` bar."""
    with progress(description, len(items)) as bar:
        for item in items:
            yield item
            bar.advance(1)


def print_line(text: str) -> None:
    """Print a plain line of text (no markup interpretation)."""
    console().print(text, markup=False)


def print_info(text: str) -> None:
    """Print an informational line (left out with --quiet or --silent)."""
    if _verbosity() == _NORMAL:
        print_line(text)


def cell_text(value: Any) -> str:
    """How a value reads in a table cell: lists joined, booleans as yes/no, None blank."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(cell_text(item) for item in value)
    if isinstance(value, dict):
        return ", ".join(f"{key}={cell_text(item)}" for key, item in value.items())
    return str(value)


def delivery_json(delivery: Delivery) -> dict[str, Any]:
    """A delivery in the API's wire shape (body as utf8 text when it is valid UTF-8, else base64;
    `priority` when above 0)."""
    body, encoding = body_text(delivery.body)
    wire: dict[str, Any] = {
        "id": delivery.id,
        "body": body,
        "encoding": encoding,
        "headers": delivery.headers,
        "delivery_count": delivery.delivery_count,
        "redelivered": delivery.redelivered,
    }
    if delivery.priority:
        wire["priority"] = delivery.priority
    return wire


def body_text(body: bytes) -> tuple[str, str]:
    """The body as (text, "utf8") when it decodes, else (base64 text, "base64")."""
    try:
        return body.decode("utf-8"), "utf8"
    except UnicodeDecodeError:
        return base64.b64encode(body).decode("ascii"), "base64"


def delivery_row(delivery: Delivery) -> list[Any]:
    """A delivery as a row under DELIVERY_COLUMNS."""
    text, encoding = body_text(delivery.body)
    return [
        delivery.id,
        delivery.delivery_count,
        delivery.redelivered,
        delivery.headers or None,
        text if encoding == "utf8" else f"base64:{text}",
    ]


DELIVERY_COLUMNS = ("id", "delivery count", "redelivered", "headers", "body")


def print_deliveries(deliveries: Sequence[Delivery], formatter: str) -> None:
    """Print a finished list of deliveries: one table, or a JSON list."""
    if formatter == "json":
        print_json([delivery_json(delivery) for delivery in deliveries])
    else:
        print_table(DELIVERY_COLUMNS, (delivery_row(delivery) for delivery in deliveries))


def stream_delivery(delivery: Delivery, formatter: str) -> None:
    """Print one delivery of a running stream: a JSON line, or a readable line."""
    if formatter == "json":
        print_json_line(delivery_json(delivery))
        return
    text, encoding = body_text(delivery.body)
    marks = f" (redelivered, count {delivery.delivery_count})" if delivery.redelivered else ""
    if delivery.priority:
        marks += f" [priority {delivery.priority}]"
    headers = f" {cell_text(delivery.headers)}" if delivery.headers else ""
    print_line(f"#{delivery.id}{marks}{headers}: {text if encoding == 'utf8' else 'base64:' + text}")
