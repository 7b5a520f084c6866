"""Helpers for the membership tests: CLI runs, a publisher and a consumer running under changes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import urllib.error
import urllib.request
from types import TracebackType
from typing import Any

from click.testing import CliRunner
from support.eventually import eventually

from cli.node_processes import HARNESS_HEADERS
from cli.queues import cli as queues_command
from quorumq import Client, NotFoundError, QuorumqError

DRAIN_TIMEOUT_S = 30.0
FAST_RECONCILE = {"QUORUMQ_MEMBERSHIP_TRIGGER_DELAY_MS": "300"}
AUTO_REMOVE = {**FAST_RECONCILE, "QUORUMQ_MEMBERSHIP_AUTO_REMOVE": "true"}


def run_queues_cli(node_url: str, *args: str) -> tuple[int, str, str]:
    """Run `quorumq-queues --node URL ARGS...`; returns (exit code, stdout, stderr)."""
    result = CliRunner().invoke(queues_command, ["--node", node_url, *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


async def queues_cli(node_url: str, *args: str) -> tuple[int, str, str]:
    """`run_queues_cli` off the event loop (the CLI blocks on its own client thread)."""
    return await asyncio.to_thread(run_queues_cli, node_url, *args)


def get_json(url: str) -> Any:
    """GET `url` as the harness administrator; the parsed JSON answer (HTTPError for a 4xx or 5xx)."""
    with urllib.request.urlopen(urllib.request.Request(url, headers=HARNESS_HEADERS), timeout=5) as answer:
        return json.load(answer)


def local_queues(url: str) -> dict[str, dict]:
    """A node's view: hosted queues answer from the local replica, others from their leader."""
    return {q["name"]: q for q in get_json(f"{url}/api/queues?local=true")}


def registered_nodes(url: str) -> dict[str, dict]:
    """Every registered node's record (name, http, raft, status) as the node at `url` lists it."""
    return {n["name"]: n for n in get_json(f"{url}/api/nodes")}


def node_statuses(url: str) -> dict[str, str]:
    """Every registered node and whether the node at `url` reaches it ("up"/"down")."""
    return {name: n["status"] for name, n in registered_nodes(url).items()}


def hosts_replica(url: str, queue: str, node: str) -> bool:
    """True when node `node` (reached at `url`) holds a replica of `queue`."""
    try:
        get_json(f"{url}/api/queues/{queue}/members/{node}")
        return True
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return False
        raise


class Load:
    """A confirmed publisher and an acking consumer on one queue while the test changes its members.

    `confirmed` holds every value whose publish was confirmed, `consumed` every value delivered;
    `max_gap_s` is the longest time without a delivery while publishing went on. Leaving the
    context stops publishing and drains until every confirmed value was consumed (or time runs out).
    """

    def __init__(self, urls: list[str], queue: str) -> None:
        self.queue = queue
        self.client = Client(urls, timeout=30.0)
        self.confirmed: set[int] = set()
        self.consumed: set[int] = set()
        self.max_gap_s = 0.0
        self._publishing = True
        self._draining = False
        self._values = iter(range(10**9))
        self._tasks: list[asyncio.Task] = []

    async def __aenter__(self) -> Load:
        self._tasks = [asyncio.create_task(self._publish()), asyncio.create_task(self._consume())]
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._publishing = False
        await self._tasks[0]
        self._draining = True
        with contextlib.suppress(AssertionError):  # what never arrives is `lost()`, for the test to judge
            await eventually(lambda: self.confirmed <= self.consumed, "the drain", timeout=DRAIN_TIMEOUT_S)
        self._tasks[1].cancel()
        await asyncio.gather(self._tasks[1], return_exceptions=True)
        await self.client.close()

    async def until_confirmed(self, count: int, timeout: float = 30.0) -> None:
        """Wait until `count` more values are confirmed."""
        wanted = len(self.confirmed) + count
        await eventually(lambda: len(self.confirmed) >= wanted, f"{wanted} confirmed", timeout=timeout)

    def lost(self) -> set[int]:
        """Confirmed values never delivered."""
        return self.confirmed - self.consumed

    async def _publish(self) -> None:
        while self._publishing:
            values = [next(self._values) for _ in range(5)]
            try:
                await self.client.publish(self.queue, [str(v) for v in values])
            except QuorumqError:
                continue
            self.confirmed.update(values)

    async def _consume(self) -> None:
        tag = await self.client.consume(self.queue, prefetch=200)
        last = time.monotonic()
        while True:
            try:
                batch = await self.client.deliveries(self.queue, tag, max=200, wait=0.5)
                if batch:
                    await self.client.ack(self.queue, tag, [d.id for d in batch])
            except NotFoundError:
                tag = await self.client.consume(self.queue, prefetch=200)
                continue
            except QuorumqError:
                continue
            now = time.monotonic()
            if self._publishing:
                self.max_gap_s = max(self.max_gap_s, now - last)
            if batch:
                self.consumed.update(int(d.body) for d in batch)
                last = now
