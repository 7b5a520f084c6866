"""A lazy filesystem mount as the harness runs it: start its daemon, discard, read its counts, unmount.

The daemon runs in its own session, so a Ctrl-C in the terminal reaches only the harness, which then
stops the nodes first and the mounts after them; a daemon whose harness dies unmounts by itself.
`stop` always leaves the mountpoint unmounted (lazily, if the daemon died), so no dead mount is left
for the next run to trip over.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from jepsen_tests.lazy_control import ControlError, call

START_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 10.0


class LazyMountError(RuntimeError):
    """The daemon did not come up."""


def unavailable_reason() -> str | None:
    """Why a lazy filesystem cannot be mounted here, or None when it can."""
    if os.geteuid() != 0:
        return "mounting the lazy filesystem needs root"
    if not Path("/dev/fuse").exists():
        return "/dev/fuse is missing (load the fuse module, or give the container the device)"
    try:
        import mfusepy  # noqa: F401  (loads libfuse3)
    except (ImportError, OSError) as exc:
        return f"no FUSE binding: {exc} (pip install mfusepy; apt-get install fuse3)"
    return None


def is_mounted(path: Path) -> bool:
    """Whether `path` is a mountpoint now (read from the mount table, so a mount whose daemon died,
    which `os.path.ismount` cannot stat, counts too)."""
    target = str(path.resolve()).replace("\\", "\\134").replace(" ", "\\040").replace("\t", "\\011")
    with open("/proc/self/mountinfo", encoding="utf-8") as table:
        return any(line.split()[4] == target for line in table)


class LazyMount:
    """The lazy filesystem daemon serving `mountpoint` from `store_dir`, logging to `log_path`."""

    def __init__(self, mountpoint: Path, store_dir: Path, log_path: Path) -> None:
        self.mountpoint = mountpoint
        self.store_dir = store_dir
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        """True while the daemon process is alive."""
        return self.process is not None and self.process.poll() is None

    def start(self, timeout: float = START_TIMEOUT_S) -> None:
        """Mount (the store survives from an earlier mount) and wait until the daemon answers."""
        for directory in (self.mountpoint, self.store_dir, self.log_path.parent):
            directory.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "jepsen_tests.lazy_fs", str(self.mountpoint), str(self.store_dir)]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while not (is_mounted(self.mountpoint) and self._answers()):
            if not self.running or time.monotonic() > deadline:
                self.stop()
                tail = self.log_path.read_text(errors="replace")[-2000:]
                raise LazyMountError(f"lazy filesystem on {self.mountpoint} did not come up:\n{tail}")
            time.sleep(0.02)

    def stats(self) -> dict[str, int]:
        """What a discard would lose now (dirty bytes, unsynced files and entries, ...)."""
        return call(self.store_dir, "stats")

    def discard(self) -> dict[str, int]:
        """Lose everything not fsynced; returns what was lost. The mount shows only durable state when
        this returns. Meant for a mount whose users are dead (see `lazy_fs`)."""
        return call(self.store_dir, "discard")

    def fill(self, free: int) -> dict[str, int]:
        """Fill the disk but for `free` bytes: writes that need more fail with ENOSPC, and statfs tells
        the room left. Returns the bytes used and the capacity."""
        return call(self.store_dir, f"fill {free}")

    def unfill(self) -> dict[str, int]:
        """Room again: lift the capacity `fill` set."""
        return call(self.store_dir, "unfill")

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM the daemon (it unmounts), SIGKILL it if it hangs, and unmount what is left."""
        if self.process is not None and self.running:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if is_mounted(self.mountpoint):
            umount = ["umount", "-l", str(self.mountpoint)]
            subprocess.run(umount, capture_output=True, timeout=STOP_TIMEOUT_S)

    def _answers(self) -> bool:
        try:
            self.stats()
        except ControlError:
            return False
        return True
