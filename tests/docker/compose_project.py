"""Docker Compose projects of quorumq nodes for tests: a unique project name, free host ports, and
the Docker operations the tests inject (kill, restart, network disconnect)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path

from cli.node_processes import ClusterError, free_ports, wait_until
from quorumq import Client

REPO = Path(__file__).resolve().parents[2]
BASE_FILE = REPO / "docker-compose.yml"
FIVE_FILE = REPO / "docker-compose.five.yml"
JOIN_FILE = REPO / "docker-compose.join.yml"
NETWORK = "quorumq"
HEALTH_TIMEOUT_S = 90.0
BUILD_TIMEOUT_S = 900.0
COMMAND_TIMEOUT_S = 120.0


def docker_unavailable_reason() -> str | None:
    """Why the Docker tests cannot run here, or None when `docker info` succeeds."""
    if shutil.which("docker") is None:
        return "the docker command is not installed"
    try:
        info = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "`docker info` did not answer within 30 s"
    if info.returncode != 0:
        return f"`docker info` failed: {(info.stderr or info.stdout).strip()[:300]}"
    return None


@cache
def compose_command() -> tuple[str, ...]:
    """`docker compose` (Compose v2) when it works, else the `docker-compose` (v1) program."""
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True)
    return ("docker", "compose") if probe.returncode == 0 else ("docker-compose",)


def run(
    command: Sequence[str | Path],
    *,
    env: dict[str, str] | None = None,
    check: bool = True,
    timeout: float = COMMAND_TIMEOUT_S,
) -> subprocess.CompletedProcess[str]:
    """Run a command; with `check`, a non-zero exit raises with its output."""
    result = subprocess.run(
        [str(part) for part in command], capture_output=True, text=True, env=env, cwd=REPO, timeout=timeout
    )
    if check and result.returncode != 0:
        raise ClusterError(f"{' '.join(map(str, command))} exited {result.returncode}:\n{result.stderr}")
    return result


def build_node_image() -> None:
    """The node image as a user here builds it: the base image only where missing, host wheels, build."""
    run([REPO / "scripts/build-base-image.sh"], timeout=BUILD_TIMEOUT_S)
    run([REPO / "scripts/build-docker-wheels.sh"], timeout=BUILD_TIMEOUT_S)
    # Compose interpolates the whole file even to build, so the required variables need values
    # (docs/use/docker.md exports them first); a build uses neither.
    required = {"QUORUMQ_CLUSTER_SECRET": uuid.uuid4().hex, "QUORUMQ_BOOTSTRAP_PASSWORD": uuid.uuid4().hex}
    run(
        [*compose_command(), "-f", BASE_FILE, "build", "node1"],
        env={**os.environ, **required},
        timeout=BUILD_TIMEOUT_S,
    )


class ComposeProject:
    """One compose project; node services publish their HTTP port on a free host port."""

    def __init__(self, nodes: Sequence[str], files: Sequence[Path] = (BASE_FILE,)) -> None:
        self.name = f"quorumq-test-{uuid.uuid4().hex[:10]}"
        self.nodes = list(nodes)
        self.files = list(files)
        self.http_ports = dict(zip(self.nodes, free_ports(len(self.nodes)), strict=True))
        self.network = f"{self.name}_{NETWORK}"
        self.admin = ("admin", uuid.uuid4().hex)
        self.env = {
            **os.environ,
            "COMPOSE_PROJECT_NAME": self.name,
            "QUORUMQ_HEALTHCHECK_INTERVAL": "1s",
            "QUORUMQ_CLUSTER_SECRET": uuid.uuid4().hex,
            "QUORUMQ_BOOTSTRAP_USER": self.admin[0],
            "QUORUMQ_BOOTSTRAP_PASSWORD": self.admin[1],
            **{f"QUORUMQ_{node.upper()}_PORT": str(port) for node, port in self.http_ports.items()},
        }

    def url(self, node: str) -> str:
        """The node's HTTP API as published on the host."""
        return f"http://127.0.0.1:{self.http_ports[node]}"

    @property
    def urls(self) -> list[str]:
        """Every node's published HTTP API."""
        return [self.url(node) for node in self.nodes]

    @property
    def admin_flags(self) -> tuple[str, ...]:
        """`quorumq` options that log in as the administrator."""
        return ("--user", self.admin[0], "--password", self.admin[1])

    def client(self, *nodes: str, timeout: float = 30.0) -> Client:
        """A client of the given nodes' published ports (default: all), logged in as the administrator."""
        return Client([self.url(node) for node in nodes or self.nodes], timeout=timeout, auth=self.admin)

    def compose(
        self, *args: str, check: bool = True, timeout: float = COMMAND_TIMEOUT_S
    ) -> subprocess.CompletedProcess[str]:
        """Run a compose subcommand on this project."""
        files = [part for file in self.files for part in ("-f", str(file))]
        return run([*compose_command(), *files, *args], env=self.env, check=check, timeout=timeout)

    def up(self, *nodes: str) -> None:
        """Create or start the given nodes (default: all of this project's nodes) in the background."""
        self.compose("up", "-d", "--no-build", *(nodes or self.nodes))

    def down(self) -> None:
        """Remove containers, network and volumes: every trace of the project."""
        self.compose("down", "-v", "--remove-orphans", check=False)

    def container(self, node: str) -> str:
        """The container id of a node."""
        container = self.compose("ps", "-q", node).stdout.strip()
        if not container:
            raise ClusterError(f"{node} has no container")
        return container

    def inspect(self, node: str, template: str) -> str:
        """`docker inspect --format TEMPLATE` of the node's container."""
        return run(["docker", "inspect", "--format", template, self.container(node)]).stdout.strip()

    def health(self, node: str) -> str:
        """Docker's health status of the node (starting, healthy, unhealthy) or its state if stopped."""
        if self.inspect(node, "{{.State.Running}}") != "true":
            return self.inspect(node, "{{.State.Status}}")
        return self.inspect(node, "{{.State.Health.Status}}")

    def wait_health(
        self, nodes: Sequence[str], status: str = "healthy", timeout: float = HEALTH_TIMEOUT_S
    ) -> None:
        """Wait until Docker reports `status` for every given node; the error carries the logs."""
        try:
            for node in nodes:
                wait_until(lambda node=node: self.health(node) == status, timeout, f"{node} to be {status}")
        except ClusterError as exc:
            raise ClusterError(f"{exc}\n{self.logs()}") from exc

    def exec(self, node: str, *command: str) -> subprocess.CompletedProcess[str]:
        """Run a command inside the node's container (no check: callers look at the exit code)."""
        return run(["docker", "exec", self.container(node), *command], check=False)

    def timed(self, *args: str) -> float:
        """Seconds a compose subcommand took."""
        started = time.monotonic()
        self.compose(*args)
        return time.monotonic() - started

    def disconnect(self, node: str) -> None:
        """Cut the node off the project network: a real partition from every other node."""
        run(["docker", "network", "disconnect", self.network, self.container(node)])

    def reconnect(self, node: str) -> None:
        """Undo `disconnect`: same network and service-name alias (the address may differ: nodes listen
        on every interface and peers dial the name)."""
        run(["docker", "network", "connect", "--alias", node, self.network, self.container(node)])

    def logs(self, lines: int = 40) -> str:
        """The end of every container's log, for failure reports."""
        return self.compose("logs", "--no-color", f"--tail={lines}", check=False).stdout


ProjectFactory = Callable[[Sequence[str], Sequence[Path]], ComposeProject]
"""Makes a compose project of the given node services from the given compose files."""
