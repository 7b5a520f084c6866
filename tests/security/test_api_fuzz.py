"""Schemathesis against a running 3-node cluster, driven by the served OpenAPI document: no request
makes a node answer 5xx or die, and afterwards the cluster is healthy and still holds every message
it confirmed before the fuzzing.

Examples per operation: QUORUMQ_API_FUZZ_EXAMPLES (default 10 in CI; see docs/security.md).
Cluster membership changes (join, forget) are left out: they would fuzz the cluster's shape, not input
handling. Publishes are also sent as msgpack (the extension). Requests are made as the loopback guest
(an administrator that cannot be deleted or changed).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from typing import Any

import msgpack
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from api.client import QuorumqClient
from api.openapi import spec
from cli.node_processes import HARNESS_PASSWORD, HARNESS_USER, ProcessCluster

EXAMPLES = int(os.environ.get("QUORUMQ_API_FUZZ_EXAMPLES", "10"))
CANARY = "fuzz-canary"
CANARY_MESSAGES = 50
LONG_POLL_CAP_S = "0.1"

schema = schemathesis.openapi.from_dict(spec()).exclude(path_regex="^/api/nodes")


@schemathesis.serializer("application/msgpack")
def _msgpack(ctx, value):  # type: ignore[no-untyped-def]
    """Publishes in msgpack too."""
    return msgpack.packb(_fits_msgpack(value))


def _fits_msgpack(value: Any) -> Any:
    """`value` with integers msgpack cannot carry (beyond 64 bits, as JSON can) turned into text."""
    if isinstance(value, dict):
        return {key: _fits_msgpack(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_fits_msgpack(item) for item in value]
    if isinstance(value, int) and not -(2**63) <= value < 2**64:
        return str(value)
    return value


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    """A cluster holding a canary queue with confirmed messages."""
    cluster = ProcessCluster.start(tmp_path_factory.mktemp("fuzzed"), 3)
    asyncio.run(_fill_canary(cluster.urls))
    yield cluster
    cluster.stop()


async def _fill_canary(urls: list[str]) -> None:
    async with QuorumqClient(urls) as client:
        await client.declare(CANARY)
        for i in range(CANARY_MESSAGES):
            await client.publish(CANARY, [f"canary-{i}"])


@pytest.fixture(scope="module")
def http() -> Iterator[requests.Session]:
    with requests.Session() as session:
        session.auth = (HARNESS_USER, HARNESS_PASSWORD)
        yield session


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_generated_request_makes_a_node_fail(case, fuzzed: ProcessCluster, http: requests.Session) -> None:  # type: ignore[no-untyped-def]
    if case.query and "wait" in case.query:
        case.query["wait"] = LONG_POLL_CAP_S
    node = fuzzed.nodes[hash(case.path) % len(fuzzed.nodes)]
    response = case.call(base_url=node.url, session=http, timeout=30)
    case.validate_response(response, checks=[not_a_server_error])
    assert all(n.running for n in fuzzed.nodes)


def test_after_fuzzing_the_cluster_is_healthy_and_kept_every_confirmed_message(
    fuzzed: ProcessCluster,
) -> None:
    asyncio.run(_check_canary(fuzzed))


async def _check_canary(cluster: ProcessCluster) -> None:
    assert all(node.healthy() for node in cluster.nodes)
    async with QuorumqClient(cluster.urls) as client:
        got = await client.get(CANARY, count=CANARY_MESSAGES, ack="auto")
        assert sorted(d.body for d in got) == sorted(f"canary-{i}".encode() for i in range(CANARY_MESSAGES))
