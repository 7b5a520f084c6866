"""The simulation's event loop: a killed process runs nothing more and leaves nothing to warn about."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import warnings

from node_simulation.virtual_loop import Process, VirtualLoop, process


def _kill_before_boot(ran: list[str]) -> None:
    """A process whose first task is created, then the process killed before that task's first step."""
    loop = VirtualLoop()
    proc = Process("n1")
    context = contextvars.copy_context()
    context.run(process.set, proc)

    async def boot() -> None:
        ran.append("boot")

    async def main() -> None:
        loop.create_task(boot(), context=context)
        proc.kill()
        await asyncio.sleep(0.1)

    loop.run_until_complete(main())
    loop.close()


def test_a_process_killed_before_its_task_starts_leaves_no_coroutine_unawaited() -> None:
    ran: list[str] = []
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        _kill_before_boot(ran)
        gc.collect()
    assert ran == []
    assert not [w for w in seen if "never awaited" in str(w.message)]
