"""The client stands alone: client/ installs into a fresh virtualenv with aiohttp and msgpack as its only
dependencies, and `import quorumq` works there without the server; importing it never imports the server,
even where the server is installed. The two distributions move together: same version, the server
depending on exactly that client."""

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SERVER = (
    "cluster",
    "api",
    "raft_log",
    "queue_state",
    "metadata_state",
    "cli",
    "spark_io",
    "jepsen_tests",
    "rocksdict",
    "click",
    "tenacity",
    "prometheus_client",
    "rich",
    "re2",
)
"""The server's packages and the dependencies only it has."""

PROBE = """
import importlib.util, json, pathlib, sys

import quorumq
from quorumq import Client, Message, QuorumqError, SyncClient

SyncClient(["127.0.0.1:1"]).close()
server = set(sys.argv[1:])
print(json.dumps({
    "package": str(pathlib.Path(quorumq.__file__).parent),
    "imported": sorted({name.split(".")[0] for name in sys.modules} & server),
    "installed": sorted(name for name in server if importlib.util.find_spec(name) is not None),
}))
"""

REQUIRES = "import importlib.metadata, json; print(json.dumps(importlib.metadata.requires('quorumq-client')))"


def run_python(python: str | Path, code: str, *arguments: str, cwd: Path, env: dict[str, str]) -> Any:
    """What `code`, run by `python` in `cwd`, prints as JSON."""
    result = subprocess.run(
        [python, "-c", code, *arguments], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def project(path: Path) -> dict[str, Any]:
    with path.open("rb") as file:
        return tomllib.load(file)["project"]


@pytest.fixture(scope="module")
def client_alone(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A fresh virtualenv holding only the client, installed from a copy of client/ (pip builds in the
    source tree), and what importing quorumq there shows (PROBE), with the distribution's requirements."""
    root = tmp_path_factory.mktemp("client-alone")
    source = shutil.copytree(
        REPO / "client",
        root / "client",
        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", ".mypy_cache"),
    )
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True, timeout=120)
    python = venv / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", str(source)]
    subprocess.run(install, check=True, timeout=600)  # the dependencies come from pip's cache once cached
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    seen = run_python(python, PROBE, *SERVER, cwd=root, env=env)
    seen["requires"] = run_python(python, REQUIRES, cwd=root, env=env)
    return venv, seen


def test_the_client_imports_in_a_virtualenv_without_the_server(client_alone: tuple[Path, dict]) -> None:
    venv, seen = client_alone
    package = Path(seen["package"])
    assert package.is_relative_to(venv)
    assert (package / "py.typed").is_file()
    assert seen["imported"] == []
    assert seen["installed"] == []


def test_the_client_requires_only_aiohttp_and_msgpack(client_alone: tuple[Path, dict]) -> None:
    _, seen = client_alone
    assert sorted(re.split(r"[<>=!~ ;\[]", requirement)[0] for requirement in seen["requires"]) == [
        "aiohttp",
        "msgpack",
    ]


def test_importing_the_client_imports_nothing_of_the_server_where_it_is_installed(tmp_path: Path) -> None:
    seen = run_python(sys.executable, PROBE, *SERVER, cwd=tmp_path, env=dict(os.environ))
    assert set(seen["installed"]) >= {"cluster", "api", "rocksdict"}  # they are there to import
    assert seen["imported"] == []


def test_the_server_depends_on_the_client_of_its_own_version() -> None:
    server, client = project(REPO / "pyproject.toml"), project(REPO / "client" / "pyproject.toml")
    assert client["name"] == "quorumq-client"
    assert client["version"] == server["version"]
    assert f"quorumq-client=={client['version']}" in server["dependencies"]
