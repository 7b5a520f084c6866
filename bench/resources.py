"""CPU seconds and peak RSS of broker node processes (each with its child processes) over a run."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import psutil

SAMPLE_INTERVAL_S = 0.1


@dataclass(frozen=True)
class NodeUsage:
    """What one broker node used during a measured interval."""

    cpu_seconds: float
    peak_rss_bytes: int


def _tree(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def _cpu_seconds(processes: list[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def _rss(processes: list[psutil.Process]) -> int:
    total = 0
    for process in processes:
        try:
            total += process.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return total


def rss_bytes(pid: int) -> int:
    """The resident memory of a process and its children now."""
    return _rss(_tree(pid))


class UsageSampler:
    """Samples RSS of every node in a background thread; `stop()` returns per-node CPU and peak RSS.

    Use as `with UsageSampler({"node1": pid, ...}) as sampler: ...; usage = sampler.usage`.
    """

    def __init__(self, pids: dict[str, int]) -> None:
        self._trees = {name: _tree(pid) for name, pid in pids.items()}
        self._cpu_start = {name: _cpu_seconds(tree) for name, tree in self._trees.items()}
        self._peak = {name: _rss(tree) for name, tree in self._trees.items()}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self.usage: dict[str, NodeUsage] = {}

    def __enter__(self) -> UsageSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._done.set()
        self._thread.join()
        self.usage = {
            name: NodeUsage(_cpu_seconds(tree) - self._cpu_start[name], self._peak[name])
            for name, tree in self._trees.items()
        }

    def _sample(self) -> None:
        while not self._done.wait(SAMPLE_INTERVAL_S):
            for name, tree in self._trees.items():
                self._peak[name] = max(self._peak[name], _rss(tree))
