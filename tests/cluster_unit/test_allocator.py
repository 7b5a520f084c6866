"""The node's allocator tuning takes effect on glibc (this project's Linux target)."""

from __future__ import annotations

import platform

import pytest

from cluster.allocator import keep_freed_memory


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_thresholds_are_applied_on_glibc() -> None:
    assert keep_freed_memory() is True
