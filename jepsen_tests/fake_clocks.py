"""Per-node wall-clock offsets through libfaketime (Debian `libfaketime`), changed while nodes run.

Each node is started with libfaketime preloaded and its own timestamp file holding an offset such as
`+3600s`; the library re-reads the file at most every CACHE_S seconds, so writing the file jumps that
node's wall clock within about a second. Monotonic clocks are left alone
(`FAKETIME_DONT_FAKE_MONOTONIC`): only the wall clock moves, as when NTP steps it or a VM resumes.

Two bugs of libfaketime 0.9.10 (Debian 12) with monotonic time not faked, found here:
- a `pthread_cond_timedwait` on a monotonic condition variable times out early (fixed upstream in
  2025, PR #503). Python's GIL waits on one, so hand-overs between threads went wrong and the node
  ran ten times slower; `FAKETIME_WAIT_MS` makes such a wait last COND_WAIT_MS (the GIL's own
  switch interval; a timed wait may always wake early), which restores the normal speed.
- `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` fails with EINVAL (upstream issue #426), which
  breaks Python's `time.sleep`; the node never calls it (asyncio waits in epoll), and the nemesis
  tests prove the node keeps working under the library.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

LIBRARY_GLOB = "/usr/lib/*/faketime/libfaketime.so.1"
INSTALL_HINT = "apt-get install faketime libfaketime"
CACHE_S = 1
COND_WAIT_MS = 5


def libfaketime() -> Path | None:
    """The installed libfaketime shared object, or None."""
    found = sorted(glob.glob(LIBRARY_GLOB))
    return Path(found[0]) if found else None


class FakeClocks:
    """One offset file per node under `directory`, all at 0 until shifted."""

    def __init__(self, directory: Path, names: list[str]) -> None:
        library = libfaketime()
        if library is None:
            raise RuntimeError(f"libfaketime is not installed ({INSTALL_HINT})")
        self.library = library
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self._offsets: dict[str, int] = {}
        for name in names:
            self.shift(name, 0)

    def file(self, name: str) -> Path:
        """The node's timestamp file."""
        return self.directory / f"{name}.faketime"

    def env(self, name: str) -> dict[str, str]:
        """The environment that starts `name` under its fake clock (this process's, plus libfaketime)."""
        return {
            **os.environ,
            "LD_PRELOAD": str(self.library),
            "FAKETIME_TIMESTAMP_FILE": str(self.file(name)),
            "FAKETIME_CACHE_DURATION": str(CACHE_S),
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "FAKETIME_WAIT_MS": str(COND_WAIT_MS),
        }

    def shift(self, name: str, seconds: int) -> None:
        """Set the node's wall clock `seconds` away from the real one (0 heals), effective at once."""
        path = self.file(name)
        staged = path.with_suffix(".staged")
        staged.write_text(f"{seconds:+d}s\n")
        os.replace(staged, path)  # a reader never sees a half-written offset
        self._offsets[name] = seconds

    def offset(self, name: str) -> int:
        """The node's current offset in seconds."""
        return self._offsets[name]

    def reset_all(self) -> None:
        """Every clock back to the real time."""
        for name in self._offsets:
            self.shift(name, 0)
