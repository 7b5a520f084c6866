"""Fixtures of the cluster unit tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from gated_cluster import Node, gated_cluster


@pytest.fixture
async def nodes(tmp_path: Path) -> AsyncIterator[dict[str, Node]]:
    """Three gated RaftHosts sharing one group (`gated_cluster`)."""
    async with gated_cluster(tmp_path) as result:
        yield result
