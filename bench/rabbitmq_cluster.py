"""A 3-node RabbitMQ cluster on 127.0.0.1 from Debian's `rabbitmq-server`, each node with fresh dirs.

The nodes run as the `rabbitmq` user, so every directory they use is owned by it; they are started in
their own session (no service manager) and clustered with `rabbitmqctl join_cluster`. Each node gets the
open-files limit Debian's systemd unit gives it (LimitNOFILE=65536), or as much of it as this process
may give: Debian's `rabbitmq-server` wrapper switches user with `su`, whose PAM session lowers the soft
limit to 1024, and with that RabbitMQ 3.10's file handle cache (about 927 handles) runs out at about 600
quorum queues, after which the node accepts no connection and does not stop. So the node's own script is
run under `setpriv`, which keeps the limit set here.
"""

from __future__ import annotations

import os
import resource
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cli.node_processes import free_ports, wait_until

RABBITMQ_USER = "rabbitmq"
RABBITMQ_HOME = "/var/lib/rabbitmq"  # the user's home: its Erlang cookie, shared with rabbitmqctl
SERVER_SCRIPT = "/usr/lib/rabbitmq/bin/rabbitmq-server"  # what Debian's wrapper runs after `su`
AS_RABBITMQ_USER = ("setpriv", f"--reuid={RABBITMQ_USER}", f"--regid={RABBITMQ_USER}", "--init-groups")
OPEN_FILES = 65536  # LimitNOFILE of Debian's rabbitmq-server.service
START_TIMEOUT_S = 120.0
CTL_TIMEOUT_S = 120


def ensure_rabbitmq_installed() -> None:
    """Install Debian's rabbitmq-server with apt-get when `rabbitmq-server` is missing."""
    if shutil.which("rabbitmq-server"):
        return
    subprocess.run(["apt-get", "update", "-q"], check=True)
    subprocess.run(["apt-get", "install", "-y", "-q", "rabbitmq-server"], check=True)


@dataclass
class RabbitNode:
    """One RabbitMQ node: its Erlang node name, AMQP and distribution ports, and its directories."""

    index: int
    amqp_port: int
    dist_port: int
    base_dir: Path

    @property
    def name(self) -> str:
        """The Erlang node name (`rabbitN@localhost`)."""
        return f"rabbit{self.index}@localhost"

    @property
    def url(self) -> str:
        """The AMQP URL of this node."""
        return f"amqp://guest:guest@127.0.0.1:{self.amqp_port}/"

    @property
    def pid_file(self) -> Path:
        return self.base_dir / "rabbit.pid"

    def prepare(self) -> None:
        """Create the node's config, plugin list, mnesia and log dirs, owned by the rabbitmq user."""
        if self.base_dir.exists():
            shutil.rmtree(self.base_dir)
        for sub in ("mnesia", "log"):
            (self.base_dir / sub).mkdir(parents=True)
        (self.base_dir / "enabled_plugins").write_text("[].\n")
        (self.base_dir / "rabbitmq.conf").write_text("loopback_users = none\n")
        shutil.chown(self.base_dir, RABBITMQ_USER, RABBITMQ_USER)
        for path in self.base_dir.rglob("*"):
            shutil.chown(path, RABBITMQ_USER, RABBITMQ_USER)

    def environment(self) -> dict[str, str]:
        """The RABBITMQ_* variables that give this node its own name, ports and directories."""
        return {
            **os.environ,
            "RABBITMQ_NODENAME": self.name,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.amqp_port),
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "RABBITMQ_MNESIA_BASE": str(self.base_dir / "mnesia"),
            "RABBITMQ_LOG_BASE": str(self.base_dir / "log"),
            "RABBITMQ_PID_FILE": str(self.pid_file),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.base_dir / "enabled_plugins"),
            "RABBITMQ_CONFIG_FILE": str(self.base_dir / "rabbitmq"),
        }

    def start(self) -> None:
        """Start the node in its own session and wait until it has booted."""
        log_path = self.base_dir / "console.log"
        with log_path.open("ab") as log_file:
            server = subprocess.Popen(
                ["setsid", *AS_RABBITMQ_USER, SERVER_SCRIPT],
                env={**self.environment(), "HOME": RABBITMQ_HOME},
                cwd=RABBITMQ_HOME,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_raise_open_files,
            )

        def booted() -> bool:
            if server.poll() is not None:
                raise RuntimeError(f"{self.name} exited with code {server.returncode}; see {log_path}")
            return self.pid_file.exists()

        wait_until(booted, START_TIMEOUT_S, f"{self.name} pid file")
        self.ctl("await_startup")

    def ctl(self, *args: str) -> str:
        """Run `rabbitmqctl -n NODE args...` and return its output."""
        done = subprocess.run(
            ["rabbitmqctl", "-n", self.name, *args],
            env=self.environment(),
            capture_output=True,
            text=True,
            timeout=CTL_TIMEOUT_S,
        )
        if done.returncode != 0:
            raise RuntimeError(f"rabbitmqctl {' '.join(args)} on {self.name}: {done.stdout}{done.stderr}")
        return done.stdout

    @property
    def pid(self) -> int:
        """The Erlang VM's process id (from the pid file)."""
        return int(self.pid_file.read_text().strip())

    def open_files(self) -> int:
        """The soft open-files limit the node's VM runs with (from /proc)."""
        for line in Path(f"/proc/{self.pid}/limits").read_text().splitlines():
            if line.startswith("Max open files"):
                return int(line.split()[3])
        raise RuntimeError(f"no open-files limit in /proc/{self.pid}/limits")

    def stop(self) -> None:
        """Stop the node and wait until its VM has exited."""
        pid = self.pid
        self.ctl("stop")
        wait_until(lambda: not _alive(pid), START_TIMEOUT_S, f"{self.name} to exit")
        self.pid_file.unlink(missing_ok=True)


class RabbitCluster:
    """Three (or `count`) RabbitMQ nodes joined into one cluster."""

    def __init__(self, nodes: list[RabbitNode]) -> None:
        self.nodes = nodes

    @classmethod
    def start(cls, base_dir: Path, count: int = 3) -> RabbitCluster:
        """Start `count` fresh nodes on free loopback ports and join nodes 2..N to node 1."""
        ensure_rabbitmq_installed()
        base_dir.mkdir(parents=True, exist_ok=True)
        base_dir.chmod(0o755)
        closed = [d for d in base_dir.parents if not d.stat().st_mode & stat.S_IXOTH]
        if closed:
            raise PermissionError(f"the rabbitmq user cannot reach {base_dir}: {closed[0]} is not o+x")
        ports = free_ports(2 * count)
        nodes = [
            RabbitNode(i + 1, ports[i], ports[count + i], base_dir / f"rabbit{i + 1}") for i in range(count)
        ]
        cluster = cls(nodes)
        try:
            for node in nodes:
                node.prepare()
                node.start()
            for node in nodes[1:]:
                node.ctl("stop_app")
                node.ctl("join_cluster", nodes[0].name)
                node.ctl("start_app")
        except BaseException:
            cluster.stop()
            raise
        return cluster

    @property
    def urls(self) -> list[str]:
        """Every node's AMQP URL."""
        return [node.url for node in self.nodes]

    def pids(self) -> dict[str, int]:
        """Node name to the pid of its Erlang VM, for the nodes that run."""
        return {node.name: node.pid for node in self.nodes if node.pid_file.exists()}

    def stop_node(self, index: int) -> None:
        """Stop node `index` and wait until its VM has exited."""
        self.nodes[index].stop()

    def start_node(self, index: int) -> None:
        """Start node `index` again on its directories and wait until it has booted."""
        self.nodes[index].start()

    def stop(self) -> None:
        """Stop every node that runs."""
        for node in self.nodes:
            if node.pid_file.exists():
                node.stop()


def _raise_open_files() -> None:
    """Raise the open-files limit to OPEN_FILES; without the privilege to raise the hard limit, raise
    the soft limit as far as the hard one."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard >= OPEN_FILES:
        resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, hard))
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))
    except (OSError, ValueError):  # not privileged to raise the hard limit
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
