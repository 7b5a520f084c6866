"""Fixtures for the CLI tests: a running fake node and an address where nothing listens."""

import socket
from collections.abc import Iterator

import pytest
from fake_node import FakeNode, ThreadedServer


@pytest.fixture
def fake_node() -> FakeNode:
    return FakeNode()


@pytest.fixture
def node_address(fake_node: FakeNode) -> Iterator[str]:
    """HOST:PORT of a running fake node (its state is the `fake_node` fixture)."""
    with ThreadedServer(fake_node.app()) as address:
        yield address


@pytest.fixture
def unused_address() -> str:
    """HOST:PORT of a local port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"
