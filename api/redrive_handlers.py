"""HTTP endpoints of redrive tasks (SQS's message move tasks): start one on a dead-letter queue, read
their progress, cancel the running one. Each runs on the queue's leader."""

from __future__ import annotations

import re
import uuid
from typing import Annotated, Any, ClassVar

from aiohttp import web
from msgspec import UNSET, Meta, UnsetType

from api.access import Access
from api.app_keys import CONFIG, QUEUES
from api.auth import principal, require
from api.endpoints import QUEUE, route
from api.forwarding import on_queue_leader
from api.request_bodies import Moment, RequestBody, read_body_as
from api.validation import bad, check_queue_name, moment_ms
from cluster.queues.queue_door import QueueDoor
from cluster.queues.queue_limits import INT64_MAX
from cluster.queues.queue_results import RedriveProgress
from metadata_state.vhost_names import name_in_vhost, qualified, split

TASK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@\-]{0,127}")  # full-matched
TASK_NAMES = "1-128 characters of letters, digits, '.', '_', ':', '@' or '-'"


class Redrive(RequestBody):
    """A redrive task: which messages of the dead-letter queue it moves, where, and how fast."""

    optional: ClassVar[bool] = True
    task: Annotated[str, Meta(description=f"its name, {TASK_NAMES} (default: a new one)")] | UnsetType = UNSET
    to: Annotated[
        str | None, Meta(description="the queue it moves them to (default: each one's x-death)")
    ] = None
    since: Annotated[Moment | None, Meta(description="from messages enqueued then: epoch ms or ISO-8601")] = (
        None
    )
    until: Annotated[Moment | None, Meta(description="to messages enqueued then: epoch ms or ISO-8601")] = (
        None
    )
    rate: Annotated[
        Annotated[int, Meta(ge=1, le=INT64_MAX)] | None, Meta(description="at most this many a second")
    ] = None


def task_json(task: RedriveProgress) -> dict[str, Any]:
    """A redrive task as the API shows it (times in epoch milliseconds)."""
    return {
        "task": task.task,
        "state": task.state,
        "to": None if task.target is None else name_in_vhost(task.target),
        "since": task.since_ms,
        "until": task.until_ms,
        "rate": task.rate,
        "total": task.total,
        "moved": task.moved,
        "started": task.started_ms,
        "ended": task.ended_ms,
        "reason": task.reason,
    }


@route(
    "POST",
    QUEUE + "/redrive",
    access=Access.CONFIGURE,
    summary="start a redrive task: move the dead-letter queue's messages (those there now, or enqueued from"
    " since to until) to a queue, or each to the queue its x-death names (administrators), at most"
    " rate a second; the same task again answers it",
    responses={"201": "the task", "409": "another task runs (redrive_running), or upgrade_in_progress"},
    body=Redrive,
    about=(
        "dead-letter redrive (SQS's message move task): move the messages there now (or "
        "enqueued from `since` to `until`) to `to`, or each to the queue its `x-death` names, "
        "at most `rate` a second; resumed by a new leader, each message moved once; `quorumq "
        "redrive DLQ [--to Q] [--since T] [--rate N]` with a progress bar "
        '(docs/internals/dead_lettering.md, "Redrive")'
    ),
)
@on_queue_leader
async def start_redrive(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """POST /api/queues/{q}/redrive `{"task", "to", "since", "until", "rate"}` (all optional): 201 with the
    task. It needs configure and read permission on the queue; without `to`, each message goes back to
    the queue its newest `x-death` entry names, which needs an administrator; with it, write permission
    on `to`. The same task again answers it as it
    is; another while one runs is 409 `redrive_running`."""
    body = await read_body_as(request, Redrive)
    task = uuid.uuid4().hex if body.task is UNSET else body.task
    if not TASK_NAME.fullmatch(task):
        raise bad(f"task names are {TASK_NAMES}")
    target = body.to
    caller = principal(request)
    vhost, name = split(queue.name)
    require(caller, Access.READ, queue.name, " (a redrive takes the queue's messages)")
    if target is None:
        require(caller, Access.CONFIGURE_ADMIN, queue.name, " (a redrive to the queues x-death names)")
    else:  # a queue of the same vhost
        target = qualified(vhost, check_queue_name(target, request.app[CONFIG].max_queue_name_length))
        require(caller, Access.WRITE, target, f" (the redrive target of '{name}')")
        if target == queue.name:
            raise bad("a queue cannot redrive into itself")
        request.app[QUEUES].info(target)  # 404 when there is no such queue
    since, until = moment_ms(body.since, "since"), moment_ms(body.until, "until")
    if since is not None and until is not None and since > until:
        raise bad("since must not be after until")
    started = await queue.start_redrive(task, target, since, until, body.rate)
    return web.json_response(task_json(started), status=201)


@route(
    "GET",
    QUEUE + "/redrive",
    access=Access.ANY_QUEUE_PERMISSION,
    summary="the queue's redrive tasks with their progress",
    responses={"200": "tasks"},
)
@on_queue_leader
async def list_redrives(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """GET /api/queues/{q}/redrive: the running task and the last ended ones, oldest first."""
    return web.json_response([task_json(task) for task in queue.redrive_progress()])


@route(
    "DELETE",
    QUEUE + "/redrive/{task}",
    access=Access.CONFIGURE,
    summary="cancel a redrive task: what it holds goes back to the queue",
    responses={"204": "ended"},
)
@on_queue_leader
async def cancel_redrive(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """DELETE /api/queues/{q}/redrive/{task}: 204; what it had taken and not moved goes back to the
    queue (an ended task: nothing changes)."""
    await queue.cancel_redrive(request.match_info["task"])
    return web.Response(status=204)
