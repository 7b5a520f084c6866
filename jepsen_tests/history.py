"""The operation history: Jepsen-style invoke/ok/fail/info records, written as JSON lines.

Every client operation is an `invoke` followed by exactly one completion by the same process: `ok`
(it happened), `fail` (it certainly did not happen) or `info` (the outcome is unknown, e.g. a publish
whose answer timed out after it was sent).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Literal

OpType = Literal["invoke", "ok", "fail", "info"]
OpFunction = Literal["enqueue", "dequeue", "resend"]


@dataclass(frozen=True)
class Op:
    """One history line: who (`process`), what (`f`, `value`, `queue`), how it ended (`type`), when, and
    how it was done when that is worth counting (`detail`: facts separated by spaces, each a name or
    `name=value`: `priority=N`, `delay=MS`, `touched`, `first=V`, `fanout=Q1,Q2` (`queue` is then the
    exchange), `group=G`, `batch=N`; read them with `facts`)."""

    process: str
    type: OpType
    f: OpFunction
    value: int | None
    time: float
    queue: str | None = None
    error: str | None = None
    detail: str | None = None

    @property
    def facts(self) -> dict[str, str]:
        """The detail's facts, name → value ("" for a bare name such as `touched`)."""
        named = (fact.partition("=") for fact in (self.detail or "").split())
        return {name: value for name, _, value in named}

    def to_json(self) -> str:
        """The op as one compact JSON line (None fields left out)."""
        return json.dumps({k: v for k, v in asdict(self).items() if v is not None}, separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str) -> Op:
        """Parse one history line."""
        return cls(**{"value": None, **json.loads(line)})


class HistoryWriter:
    """Appends ops to a JSONL file as they happen (thread-safe), timing them from the run's start."""

    def __init__(self, path: Path, started: float | None = None) -> None:
        self.path = path
        self.started = time.monotonic() if started is None else started
        self._lock = threading.Lock()
        self._file: IO[str] = path.open("a", encoding="utf-8")

    def now(self) -> float:
        """Seconds since the run started."""
        return time.monotonic() - self.started

    def record(
        self,
        process: str,
        type_: OpType,
        f: OpFunction,
        value: int | None,
        queue: str | None = None,
        error: str | None = None,
        detail: str | None = None,
    ) -> Op:
        """Write one op stamped now and return it."""
        op = Op(process, type_, f, value, round(self.now(), 4), queue, error, detail)
        with self._lock:
            self._file.write(op.to_json() + "\n")
        return op

    def close(self) -> None:
        """Flush and close the file."""
        with self._lock:
            self._file.close()


def read_history(path: Path) -> list[Op]:
    """Every op of a history file, in the order written."""
    with path.open(encoding="utf-8") as lines:
        return list(parse_history(lines))


def parse_history(lines: Iterable[str]) -> Iterator[Op]:
    """Ops from JSON lines, skipping blank ones."""
    for line in lines:
        if line.strip():
            yield Op.from_json(line)
