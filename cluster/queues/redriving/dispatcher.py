"""Which redrive workers a node runs: one for the running task of every queue it leads."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from cluster.queues.dead_lettering.worker import ConfirmedPublisher
from cluster.queues.redriving.worker import RedriveSource, RedriveWorker
from queue_state.redrive import RUNNING


class RedriveDispatcher:
    """Starts and stops the redrive workers of one node; they publish through `publisher`, and
    `declared(queue)` tells whether a target exists."""

    def __init__(self, publisher: ConfirmedPublisher, declared: Callable[[str], bool]) -> None:
        self.publisher = publisher
        self._declared = declared
        self.workers: dict[tuple[str, str, int], asyncio.Task[None]] = {}  # by (queue group, task, serial)

    def ensure(self, source: RedriveSource) -> None:
        """Run the worker of `source`'s running task, if it has one, this node leads it and none runs (a
        worker of an earlier start of a task stops on its own: it is bound to its start)."""
        if not source.is_leader:
            return
        running = next((task for task in source.redrives() if task.state == RUNNING), None)
        if running is None:
            return
        key = (source.group, running.task, running.serial)
        current = self.workers.get(key)
        if current is None or current.done():
            worker = RedriveWorker(source, running.task, running.serial, self.publisher, self._declared)
            self.workers[key] = asyncio.get_running_loop().create_task(worker.run())

    def ensure_all(self, sources: Iterable[RedriveSource]) -> None:
        """`ensure` for each queue (the node's upkeep: a new leader applies the log's tasks late), and
        forget workers that ended."""
        for key in [key for key, worker in self.workers.items() if worker.done()]:
            del self.workers[key]
        for source in sources:
            self.ensure(source)

    def leadership_changed(self, source: RedriveSource, is_leader: bool) -> None:
        """A queue's workers run where its leader is."""
        for key in [key for key in self.workers if key[0] == source.group]:
            self.workers.pop(key).cancel()
        if is_leader:
            self.ensure(source)
