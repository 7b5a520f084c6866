"""HTTP endpoints of redrive tasks (SQS's message move tasks): start one on a dead-letter queue, read
their progress, cancel the running one. Each runs on the queue's leader."""

from __future__ import annotations

import re
import uuid
from typing import Any

from aiohttp import web

from api.access import Access
from api.app_keys import CONFIG, QUEUES
from api.auth import principal, require
from api.forwarding import on_queue_leader
from api.validation import bad, check_queue_name, field_int, field_since, field_str, json_object
from cluster.queues.queue_door import QueueDoor
from cluster.queues.queue_results import RedriveProgress

TASK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@\-]{0,127}")  # full-matched


def task_json(task: RedriveProgress) -> dict[str, Any]:
    """A redrive task as the API shows it (times in epoch milliseconds)."""
    return {
        "task": task.task,
        "state": task.state,
        "to": task.target,
        "since": task.since_ms,
        "until": task.until_ms,
        "rate": task.rate,
        "total": task.total,
        "moved": task.moved,
        "started": task.started_ms,
        "ended": task.ended_ms,
        "reason": task.reason,
    }


@on_queue_leader
async def start_redrive(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """POST /api/queues/{q}/redrive `{"task", "to", "since", "until", "rate"}` (all optional): 201 with the
    task. It needs configure and read permission on the queue; without `to`, each message goes back to
    the queue its newest `x-death` entry names, which needs an administrator; with it, write permission
    on `to`. The same task again answers it as it
    is; another while one runs is 409 `redrive_running`."""
    body = await json_object(request, optional=True)
    unknown = set(body) - {"task", "to", "since", "until", "rate"}
    if unknown:
        raise bad(f"unknown fields {sorted(unknown)}")
    task = field_str(body, "task", uuid.uuid4().hex)
    if task is None or not TASK_NAME.fullmatch(task):
        raise bad("task names are 1-128 characters of letters, digits, '.', '_', ':', '@' or '-'")
    target = field_str(body, "to")
    caller = principal(request)
    require(caller, Access.READ, queue.name, " (a redrive takes the queue's messages)")
    if target is None:
        require(caller, Access.CONFIGURE_ADMIN, queue.name, " (a redrive to the queues x-death names)")
    else:
        check_queue_name(target, request.app[CONFIG].max_queue_name_length)
        require(caller, Access.WRITE, target, f" (the redrive target of '{queue.name}')")
        if target == queue.name:
            raise bad("a queue cannot redrive into itself")
        request.app[QUEUES].info(target)  # 404 when there is no such queue
    since, until = field_since(body, "since"), field_since(body, "until")
    if since is not None and until is not None and since > until:
        raise bad("since must not be after until")
    rate = field_int(body, "rate", None, minimum=1)
    started = await queue.start_redrive(task, target, since, until, rate)
    return web.json_response(task_json(started), status=201)


@on_queue_leader
async def list_redrives(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """GET /api/queues/{q}/redrive: the running task and the last ended ones, oldest first."""
    return web.json_response([task_json(task) for task in queue.redrive_progress()])


@on_queue_leader
async def cancel_redrive(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """DELETE /api/queues/{q}/redrive/{task}: 204; what it had taken and not moved goes back to the
    queue (an ended task: nothing changes)."""
    await queue.cancel_redrive(request.match_info["task"])
    return web.Response(status=204)
