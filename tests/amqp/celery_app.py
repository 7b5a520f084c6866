"""A Celery application on quorumq's AMQP listener, as tests/amqp/test_celery.py runs it: late acks, one
task at a time, its queue on the default exchange; remote control and events off (their queues are
non-durable auto-delete ones, which quorum queues refuse), and native delayed delivery too (it
dead-letters through exchanges of its own, not served yet). The broker URL comes from
QUORUMQ_CELERY_BROKER."""

from __future__ import annotations

import os
import time
from pathlib import Path

from celery import Celery
from kombu import Exchange, Queue

app = Celery("celery_app", broker=os.environ.get("QUORUMQ_CELERY_BROKER", "amqp://guest:guest@127.0.0.1//"))
app.conf.update(
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_default_queue="celery-tasks",
    task_default_exchange="",
    task_default_routing_key="celery-tasks",
    # Every quorumq queue is a quorum queue; saying so would make Celery set up its native delayed
    # delivery, which dead-letters through exchanges of its own.
    task_queues=[Queue("celery-tasks", Exchange(""), routing_key="celery-tasks")],
    worker_enable_remote_control=False,
    worker_send_task_events=False,
    broker_connection_retry_on_startup=True,
)


@app.task
def record(path: str, first_run_seconds: float = 0.0) -> int:
    """Append this process's id to `path`; the first run of all then sleeps `first_run_seconds` (time for
    the test to kill its worker). Returns how many runs `path` records."""
    with open(path, "a") as out:
        out.write(f"{os.getpid()}\n")
    runs = len(Path(path).read_text().splitlines())
    if runs == 1:
        time.sleep(first_run_seconds)
    return runs
