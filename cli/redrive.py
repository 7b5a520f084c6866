"""`quorumq redrive` and `quorumq redrives`: move a dead-letter queue's messages back (SQS's message move
tasks), with a progress bar, and list a queue's redrive tasks."""

from __future__ import annotations

import sys
import time
import uuid
from typing import Any

import click

from cli import output
from cli.command_group import EXIT_SERVER_ERROR, Settings, pass_settings
from quorumq import SyncClient

POLL_EVERY_S = 0.5
TASK_COLUMNS = ["task", "state", "to", "moved", "total", "rate", "started", "ended", "reason"]


def _time(value: str | None) -> int | str | None:
    """A time option: epoch milliseconds when it is digits, else ISO-8601 text for the server to read."""
    return int(value) if value is not None and value.isdigit() else value


@click.command("redrive")
@click.argument("queue")
@click.option("--to", help="Move every message to this queue (else each to the queue its x-death names).")
@click.option("--since", help="Only messages enqueued at or after this time (epoch ms or ISO-8601).")
@click.option("--until", help="Only messages enqueued at or before this time (default: when it starts).")
@click.option("--rate", type=click.IntRange(min=1), help="At most this many messages a second.")
@click.option("--task", help="The task's name (a fresh one by default; the same name again finds it).")
@click.option("--detach", is_flag=True, help="Start it and return; `quorumq redrives QUEUE` shows it.")
@click.option("--cancel", "cancel_task", metavar="TASK", help="Cancel task TASK instead of starting one.")
@pass_settings
def redrive(
    settings: Settings,
    queue: str,
    to: str | None,
    since: str | None,
    until: str | None,
    rate: int | None,
    task: str | None,
    detach: bool,
    cancel_task: str | None,
) -> None:
    """Move the messages of dead-letter queue QUEUE back: those there now (or enqueued from --since to
    --until), to --to or each to the queue it died in, at most --rate a second. The task runs in the
    cluster, surviving leader changes; this command follows it with a progress bar until it ends
    (Ctrl-C stops following, not the task). Exit 0 once every message moved, 1 if the task failed or
    was cancelled."""
    with settings.connect() as client:
        if cancel_task is not None:
            client.cancel_redrive(queue, cancel_task)
            output.print_line(f"redrive task '{cancel_task}' of '{queue}' cancelled")
            return
        started = client.start_redrive(
            queue, to=to, since=_time(since), until=_time(until), rate=rate, task=task or uuid.uuid4().hex
        )
        ended = started if detach else _follow(client, queue, started)
    if settings.formatter == "json":
        output.print_json(ended)
    else:
        output.print_line(_summary(queue, ended))
    if ended["state"] not in ("running", "completed"):
        sys.exit(EXIT_SERVER_ERROR)


def _follow(client: SyncClient, queue: str, task: dict[str, Any]) -> dict[str, Any]:
    """Poll the task until it ends, drawing its progress."""
    with output.progress(f"redrive {queue}", task["total"]) as bar:
        while task["state"] == "running":
            bar.show(task["moved"])
            time.sleep(POLL_EVERY_S)
            now = next((found for found in client.redrives(queue) if found["task"] == task["task"]), None)
            if now is None:  # replaced by a task of the same name, or past the ones the queue keeps
                return task
            task = now
    return task


def _summary(queue: str, task: dict[str, Any]) -> str:
    where = f"to '{task['to']}'" if task["to"] else "to the queues they died in"
    moved = f"{task['moved']} of {task['total']} moved {where}"
    text = f"redrive task '{task['task']}' of '{queue}' {task['state']}: {moved}"
    return text + (f" ({task['reason']})" if task["reason"] else "")


@click.command("redrives")
@click.argument("queue")
@pass_settings
def list_redrives(settings: Settings, queue: str) -> None:
    """The redrive tasks of QUEUE: the running one and the last ended, with their progress."""
    with settings.connect() as client:
        tasks = client.redrives(queue)
    if settings.formatter == "json":
        output.print_json(tasks)
        return
    output.print_table(TASK_COLUMNS, [[task[column] for column in TASK_COLUMNS] for task in tasks])
