"""The client is typed for the applications that use it: mypy checks a sample application against both
clients' methods (the blocking ones included) and finds no error in it, and finds a misuse."""

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

from quorumq import Client, SyncClient

APPLICATION = """
import asyncio

from quorumq import Client, Message, NotFoundError, SyncClient


async def publish_async(nodes: list[str]) -> list[int]:
    async with Client(nodes, wire="json") as client:
        created: bool = await client.declare("orders", {"x-delivery-limit": 5})
        async with client.subscribe("orders") as subscription:
            async for message in subscription:
                async with message.process():
                    print(created, message.body)
                break
        return await client.publish("orders", [b"raw", Message("text", headers={"k": 1})])


def publish_blocking(nodes: list[str]) -> int:
    with SyncClient(nodes, call_timeout=5.0) as client:
        reveal_type(client.publish("orders", "one order"))
        reveal_type(client.declare)
        reveal_type(client.get("orders", count=2))
        reveal_type(client.durable_checkout("orders", "reader", 10))
        reveal_type(client.create_token(ttl_s=60))
        reveal_type(client.publish_to_exchange("events", "one order", "order.eu", mandatory=True))
        try:
            stats = client.queue("orders")
        except NotFoundError:
            return 0
        with client.publisher("orders") as publisher:
            confirm = publisher.send(b"x")
        reveal_type(confirm.result())
        return len(stats) + len(asyncio.run(publish_async(nodes)))
"""

MISUSE = """
from quorumq import SyncClient

with SyncClient(["127.0.0.1:8080"]) as client:
    client.declare(5)
    client.publish("orders", "x", seq="1")
    client.no_such_method()
"""


def mypy(request: pytest.FixtureRequest, cwd: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """mypy run in `cwd`, with a cache of its own (named after `cwd`) kept across runs in pytest's cache
    (mypy's own in `cwd` when pytest runs without its cache plugin)."""
    cache = getattr(request.config, "cache", None)
    where = ["--cache-dir", str(cache.mkdir(f"client-mypy-{cwd.name}"))] if cache is not None else []
    command = [sys.executable, "-m", "mypy", *where, *arguments]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def mypy_report(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> str:
    """mypy's output on the sample application and the misuse."""
    root = tmp_path_factory.mktemp("application", numbered=False)
    (root / "application.py").write_text(APPLICATION)
    (root / "misuse.py").write_text(MISUSE)
    result = mypy(request, root, "application.py", "misuse.py")
    assert result.stderr == ""
    return result.stdout


def test_a_sample_application_type_checks_without_errors(mypy_report: str) -> None:
    assert [
        line for line in mypy_report.splitlines() if line.startswith("application.py") and "error" in line
    ] == []


def test_sync_calls_have_the_async_methods_result_types(mypy_report: str) -> None:
    revealed = re.findall(r'^application\.py:\d+: note: Revealed type is "(.*)"$', mypy_report, re.MULTILINE)
    results = [
        "list[int]",
        "-> bool",
        "list[quorumq.messages.Delivery]",
        "SequencePosition",
        "tuple[str, int]",
        "RoutedPublish",
    ]
    assert len(revealed) == len(results) + 1
    for kind, result in zip(revealed, results, strict=False):
        assert result in kind.replace("builtins.", "")
    assert revealed[-1].replace("builtins.", "") == "int"  # a SyncPublisher's confirm
    assert [kind for kind in revealed if "Any" in kind.replace("dict[str, Any] | None", "")] == []


def test_mypy_finds_the_misuse_of_a_sync_client(mypy_report: str) -> None:
    errors = re.findall(r"^misuse\.py:(\d+): error: .*\[([a-z-]+)\]$", mypy_report, re.MULTILINE)
    assert errors == [("5", "arg-type"), ("6", "arg-type"), ("7", "attr-defined")]


def test_the_sync_client_has_every_request_method_of_the_client_with_its_arguments() -> None:
    requests = {
        name: method
        for name, method in inspect.getmembers(Client, inspect.iscoroutinefunction)
        if not name.startswith("_")
    }
    assert len(requests) > 30
    for name, method in requests.items():
        blocking = getattr(SyncClient, name)
        assert inspect.signature(blocking).parameters.keys() == inspect.signature(method).parameters.keys()


def test_the_client_package_type_checks_under_its_own_config(request: pytest.FixtureRequest) -> None:
    client = Path(__file__).resolve().parents[2] / "client"
    result = mypy(request, client)  # with client/pyproject.toml's [tool.mypy]
    assert result.returncode == 0, result.stdout
