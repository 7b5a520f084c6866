"""CPU seconds and peak RSS of broker node processes (each with its descendants), and the CPU the whole
machine was busy with, read from /proc."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SAMPLE_INTERVAL_S = 0.1
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class NodeUsage:
    """What one broker node used during a measured interval."""

    cpu_seconds: float
    peak_rss_bytes: int


def descendants(pid: int) -> list[int]:
    """`pid` and every process below it (threads' children included)."""
    found = [pid]
    for parent in found:
        for task in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                found.extend(int(child) for child in task.read_text().split())
            except OSError:
                continue
    return found


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of one process (all its threads), 0 once it has gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def _rss(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_SIZE
    except OSError:
        return 0


def cpu_seconds(pid: int) -> float:
    """CPU seconds used so far by a process and its descendants."""
    return sum(_cpu_seconds(p) for p in descendants(pid))


def rss_bytes(pid: int) -> int:
    """The resident memory of a process and its descendants now."""
    return sum(_rss(p) for p in descendants(pid))


def own_rss_bytes(pid: int) -> int:
    """The resident memory of one process alone (a benchmark whose children are the broker's nodes)."""
    return _rss(pid)


def machine_busy_seconds() -> float:
    """CPU seconds the machine's cores have spent neither idle nor waiting for I/O since boot (user,
    nice, system, irq, softirq and steal); over an interval, how many cores everything running used."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle, iowait = fields[3], fields[4]
    return (sum(fields[:8]) - idle - iowait) / CLOCK_TICKS  # guest time is counted in user already


class UsageSampler:
    """Samples RSS of every node in a background thread; leaving `with` fills `usage` (CPU, peak RSS).

    Use as `with UsageSampler({"node1": pid, ...}) as sampler: ...; sampler.usage`; `rss` reads one
    process's RSS (by default with its descendants).
    """

    def __init__(self, pids: dict[str, int], rss: Callable[[int], int] = rss_bytes) -> None:
        self._pids = pids
        self._rss = rss
        self._cpu_start = {name: cpu_seconds(pid) for name, pid in pids.items()}
        self._peak = {name: rss(pid) for name, pid in pids.items()}
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
            name: NodeUsage(cpu_seconds(pid) - self._cpu_start[name], self._peak[name])
            for name, pid in self._pids.items()
        }

    @property
    def peak_rss(self) -> dict[str, int]:
        """Each node's peak RSS while sampled (once the `with` is left)."""
        return {name: usage.peak_rss_bytes for name, usage in self.usage.items()}

    def _sample(self) -> None:
        while not self._done.wait(SAMPLE_INTERVAL_S):
            for name, pid in self._pids.items():
                self._peak[name] = max(self._peak[name], self._rss(pid))
