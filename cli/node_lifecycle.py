"""A node's life in the server process, through failed writes (issue 40): a write the disk refuses
stops the node, not the process.

The node runs until it is told to stop, or until its disk refuses a write (`Node.disk_full`). Then it
stops as a restart would (what it had written stays; nothing it had not is acknowledged), gives back
its disk ballast, and its HTTP port answers 503 `resource_alarm` (`api.paused_app`) until the disk has
`RESUME_FREE_BYTES` free again; the node then starts again on what its disk holds, exactly as after a
restart, and catches up with its groups. A node that cannot start for want of disk waits the same way;
any other failure ends the process as before."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

from cli.first_event import first_of
from cluster.config import NodeConfig
from cluster.node import Node
from cluster.resource_usage import disk_free, memory_total
from cluster.store.disk_ballast import ensure_ballast, release_ballast
from raft_log.storage.database import out_of_space

log = logging.getLogger("quorumq")

RESUME_FREE_BYTES = 64 * 1024 * 1024  # RocksDB's memtable, which opening the database may flush
ROOM_POLL_S = 1.0


async def run_node(config: NodeConfig, stopping: asyncio.Event) -> None:
    """Serve the node until `stopping` is set, starting it again after each failed write."""
    from api.amqp.listener import AmqpListener
    from api.app import serve
    from api.join_requester import HttpJoinRequester
    from api.paused_app import serve_paused
    from cluster.security.peer_auth import NodeCaller

    caller = NodeCaller.from_config(config)
    data_dir = Path(config.data_dir)
    while not stopping.is_set():
        data_dir.mkdir(parents=True, exist_ok=True)
        ensure_ballast(data_dir, config.disk_ballast_bytes, config.disk_free_limit.bytes_of(memory_total()))
        node = Node(config, HttpJoinRequester(caller))
        try:
            runner = await serve(node)
        except Exception as exc:
            with contextlib.suppress(Exception):  # what it opened before it failed
                await node.stop()
            if not out_of_space(exc):
                raise
            failure = f"the node could not start: {exc}"
        else:
            log.info("node %s serving HTTP on %s, Raft on %s", config.node, config.http, config.raft)
            amqp = AmqpListener(runner.app)
            try:
                await amqp.start(config)
                await first_of(stopping, node.disk_full)
                if node.disk_full_error is None:
                    await node.hand_over_leadership()
            finally:
                await amqp.close()
                await runner.cleanup()
                await node.stop()
            if node.disk_full_error is None:
                return
            failure = str(node.disk_full_error)
        release_ballast(data_dir)
        log.error("node %s stopped: %s; it starts again once its disk has room", config.node, failure)
        paused = await serve_paused(config, failure)
        try:
            await _room_or_stop(data_dir, stopping)
        finally:
            await paused.cleanup()


async def _room_or_stop(data_dir: Path, stopping: asyncio.Event) -> None:
    """Wait until the disk holding `data_dir` has RESUME_FREE_BYTES free, or `stopping` is set."""
    while disk_free(data_dir) < RESUME_FREE_BYTES and not stopping.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), ROOM_POLL_S)
