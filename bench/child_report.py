"""Runs a client program that prints its figures as one JSON line (Bench.java, wrk's Lua script)."""

from __future__ import annotations

import asyncio
import json
from typing import Any


async def child_report(argv: list[str], what: str) -> dict[str, Any]:
    """Run `argv` and return the JSON object on the last line of its output; raise when it exited with
    an error or reported failures (its `failures` count)."""
    process = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"{what} exited {process.returncode}: {err.decode()[-2000:]}")
    report: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    if report["failures"]:
        raise RuntimeError(f"{what}: {report['failures']} failed or refused")
    return report
