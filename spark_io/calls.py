"""Calls to the cluster from Spark's code, with refusals explained in the connector's terms.

Executors run each call on a short-lived event loop with its own client (`call`), so nothing
unpicklable (sessions, sockets, loops) is ever kept on a reader, partition or writer object.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from quorumq import Client, ForbiddenError, UnauthorizedError
from spark_io.connection import Connection

T = TypeVar("T")


class AccessRefused(PermissionError):
    """The cluster refused the connector's credentials (401) or their permission on a queue (403)."""


@contextmanager
def refusals_explained(connection: Connection) -> Iterator[None]:
    """Turn a 401 or 403 from the cluster into an AccessRefused that says which options to check."""
    try:
        yield
    except UnauthorizedError as exc:
        raise AccessRefused(
            f"format('quorumq'): the cluster refused {connection.who()}: {exc.reason} "
            "(check the options user, password/passwordFile or token)"
        ) from exc
    except ForbiddenError as exc:
        refused = f"format('quorumq'): permission denied for {connection.who()}: {exc.reason}"
        raise AccessRefused(refused) from exc


def call(connection: Connection, action: Callable[[Client], Awaitable[T]]) -> T:
    """Run `action(client)` against the cluster on a fresh event loop and client; return its result."""

    async def run() -> T:
        async with connection.async_client() as client:
            return await action(client)

    with refusals_explained(connection):
        return asyncio.run(run())
