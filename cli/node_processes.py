"""Node processes on this machine: start, stop, SIGKILL, restart, wait for health.

Used by `quorumq cluster start`, the tests, the benchmarks and the fault suite, so that every one of
them runs real `quorumq server` processes talking real TCP. A node marked `supervised` is treated as a
deployment's supervisor would: when it exits with EX_TEMPFAIL (75: it found its database damaged,
decisions 0011 and 0016) it is started again, and sets the damaged database aside. `quorumq cluster
start`, the fault suite and the damage tests supervise their nodes; elsewhere an exit 75 is a node that
stopped, which a test sees.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cluster.config import is_loopback_host
from quorumq import QuorumqError, SyncClient
from quorumq.auth import PASSWORD_ENV, USER_ENV, basic_header

READY_TIMEOUT_S = 60.0
SECRET_ENV = "QUORUMQ_CLUSTER_SECRET"
HARNESS_USER = "quorumq-harness"
HARNESS_PASSWORD = "quorumq-harness-password"
HARNESS_HEADERS = {"Authorization": basic_header(HARNESS_USER, HARNESS_PASSWORD)}
"""Raw HTTP requests (tests of the server, not of the client) log in as the harness administrator."""
HARNESS_SECRET = secrets.token_hex(32)
"""The cluster secret of every node this process starts (generated anew by each process)."""
HARNESS_ENV = {
    "QUORUMQ_BOOTSTRAP_USER": HARNESS_USER,
    "QUORUMQ_BOOTSTRAP_PASSWORD": HARNESS_PASSWORD,
    "QUORUMQ_LOOPBACK_GUEST": "true",  # kept beside the bootstrap user: clients given no credentials use it
    SECRET_ENV: HARNESS_SECRET,
}


def harness_env(env: dict[str, str] | None) -> dict[str, str]:
    """A node's environment: `env` (or this process's) plus the harness bootstrap administrator, the
    loopback guest and cluster secret, unless the caller chose others (the value, or its `_FILE` variant)."""
    given = os.environ if env is None else env
    defaults = {k: v for k, v in HARNESS_ENV.items() if f"{k}_FILE" not in given}
    return {**defaults, **given}


def use_harness_credentials() -> None:
    """Make clients created in this process (and its child tools) log in as the harness administrator,
    unless QUORUMQ_USER is already set. Needed for nodes off loopback, where the guest is refused."""
    if not os.environ.get(USER_ENV):
        os.environ[USER_ENV] = HARNESS_USER
        os.environ[PASSWORD_ENV] = HARNESS_PASSWORD


class ClusterError(RuntimeError):
    """A node exited or did not become ready in time."""


@dataclass
class NodeProcess:
    """One node: its addresses, data dir, and the process while it runs."""

    name: str
    host: str
    http_port: int
    raft_port: int
    data_dir: Path
    log_path: Path
    seeds: list[str] = field(default_factory=list)
    amqp_port: int | None = None  # its AMQP 0-9-1 listener's port, on its host (None: no listener)
    extra_args: list[str] = field(default_factory=list)
    env: dict[str, str] | None = None
    process: subprocess.Popen | None = None
    supervised: bool = False  # started again after exiting with EX_TEMPFAIL (damage found), as compose does
    restarts: int = 0
    """Times the node exited with EX_TEMPFAIL and was started again."""
    _prefix: tuple[str, ...] = field(default=(), repr=False)
    _stopped: bool = field(default=False, repr=False)  # by kill or stop: not to be started again
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def tls_ca(self) -> str | None:
        """The CA file when this node serves HTTPS (QUORUMQ_TLS_HTTP in its env), else None."""
        env = self.env or {}
        return env.get("QUORUMQ_TLS_CA") if env.get("QUORUMQ_TLS_HTTP", "").lower() in ("1", "true") else None

    @property
    def url(self) -> str:
        """The node's HTTP (or HTTPS) base URL."""
        return f"{'https' if self.tls_ca else 'http'}://{self.host}:{self.http_port}"

    @property
    def seed(self) -> str:
        """This node as a `--seed` value."""
        return f"{self.name}@{self.host}:{self.raft_port}"

    def command(self) -> list[str]:
        """The command line that runs this node."""
        return [
            sys.executable,
            "-m",
            "cli.app",
            "server",
            f"--node={self.name}",
            f"--data-dir={self.data_dir}",
            f"--http={self.host}:{self.http_port}",
            f"--raft={self.host}:{self.raft_port}",
            *(f"--seed={s}" for s in self.seeds),
            *([] if self.amqp_port is None else [f"--amqp={self.host}:{self.amqp_port}"]),
            *self.extra_args,
        ]

    def start(self, prefix: Sequence[str] = ()) -> None:
        """Spawn the node (optionally behind a prefix such as `ip netns exec NS`).

        Every node gets the harness bootstrap administrator and cluster secret; a node off loopback
        also makes this process's clients use that administrator (see `use_harness_credentials`)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        if not is_loopback_host(self.host):
            use_harness_credentials()
        with self.log_path.open("ab") as log_file:
            self.process = subprocess.Popen(
                [*prefix, *self.command()],
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env=harness_env(self.env),
            )
        self._prefix = tuple(prefix)
        self._stopped = False
        if self.supervised:
            threading.Thread(
                target=self._start_again_after_tempfail, args=(self.process,), daemon=True
            ).start()

    def _start_again_after_tempfail(self, process: subprocess.Popen) -> None:
        """Start the node again if `process` (still its current one, not stopped) exits with EX_TEMPFAIL."""
        if process.wait() != os.EX_TEMPFAIL:
            return
        with self._lock:
            if self.process is process and not self._stopped:
                self.restarts += 1
                self.start(self._prefix)

    @property
    def running(self) -> bool:
        """True while the process is alive, or, supervised, exited with EX_TEMPFAIL to be started again."""
        if self.process is None:
            return False
        code = self.process.poll()
        return code is None or (code == os.EX_TEMPFAIL and self.supervised and not self._stopped)

    def signal(self, signum: int) -> None:
        """Send a signal to the running process."""
        if self.running:
            assert self.process is not None
            self.process.send_signal(signum)

    def kill(self) -> None:
        """SIGKILL: everything not fsynced is lost, as in a crash."""
        with self._lock:
            self._stopped = True
        if self.process is not None:
            self.signal(signal.SIGKILL)
            self.process.wait()

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM and wait; SIGKILL if it does not stop in time."""
        self.terminate()
        self.wait_stopped(timeout)

    def terminate(self) -> None:
        """SIGTERM: the node hands its leadership over and stops (`wait_stopped`)."""
        if self.process is None:
            return
        with self._lock:
            self._stopped = True
        self.signal(signal.SIGTERM)

    def wait_stopped(self, timeout: float = 15.0) -> None:
        """Wait for a terminated node to exit; SIGKILL if it does not in time."""
        if self.process is None:
            return
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def healthy(self) -> bool:
        """True when the node answers /api/health with status ok."""
        try:
            tls = ssl.create_default_context(cafile=self.tls_ca) if self.tls_ca else None
            with SyncClient([self.url], timeout=1.0, tls=tls) as client:
                return client.health().get("status") == "ok"
        except QuorumqError:
            return False


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """Ports that were free a moment ago (bound to port 0 and released)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind((host, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def plan_cluster(
    count: int,
    data_dir: Path,
    *,
    host: str = "127.0.0.1",
    ports: list[int] | None = None,
    hosts: Sequence[str] | None = None,
) -> list[NodeProcess]:
    """Nodes node1..nodeN; `ports` gives HTTP ports then Raft ports (free ones when omitted).

    `hosts` gives each node its own address instead of `host` (e.g. one network namespace per node,
    where the nodes may share port numbers)."""
    addresses = list(hosts) if hosts is not None else [host] * count
    ports = ports or free_ports(2 * count, host)
    nodes = [
        NodeProcess(
            f"node{i + 1}",
            addresses[i],
            ports[i],
            ports[count + i],
            data_dir / f"node{i + 1}",
            data_dir / "logs" / f"node{i + 1}.log",
        )
        for i in range(count)
    ]
    for node in nodes:
        node.seeds = [n.seed for n in nodes]
    return nodes


def loopback_hosts(count: int, hosts: int) -> list[str]:
    """Addresses for `count` nodes on `hosts` hosts played by loopback addresses 127.0.0.1.., in runs
    (6 on 3: node1 and node2 on the first), so placement sees several nodes per host (decision 0015)."""
    return [f"127.0.0.{1 + i * hosts // count}" for i in range(count)]


def wait_until(
    condition: Callable[[], bool], timeout: float, what: str, nodes: Sequence[NodeProcess] = ()
) -> None:
    """Poll `condition` until true; fail early if a node process has exited (but for a supervised node's
    EX_TEMPFAIL: it is started again)."""
    deadline = time.monotonic() + timeout
    while not condition():
        for node in nodes:
            if node.process is not None and not node.running:
                raise ClusterError(f"{node.name} exited with code {node.process.returncode}")
        if time.monotonic() > deadline:
            raise ClusterError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)


def wait_healthy(nodes: Sequence[NodeProcess], timeout: float = READY_TIMEOUT_S) -> None:
    """Wait until every given node is healthy."""
    for node in nodes:
        wait_until(node.healthy, timeout, f"{node.name} to become healthy", [node])


class ProcessCluster:
    """A set of node processes started together."""

    def __init__(self, nodes: list[NodeProcess]) -> None:
        self.nodes = nodes

    @classmethod
    def start(
        cls,
        data_dir: Path,
        count: int = 3,
        extra_args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        hosts: int = 1,
        prefix: Sequence[str] = (),
        amqp: bool = False,
    ) -> ProcessCluster:
        """Start `count` nodes on free loopback ports (extra QUORUMQ_* settings in `env`), spread over
        `hosts` loopback addresses (`loopback_hosts`), each behind `prefix` (e.g. `taskset -c 0`), with
        an AMQP listener on a free port each when `amqp`, and wait for health."""
        nodes = plan_cluster(count, data_dir, hosts=loopback_hosts(count, hosts))
        for node, port in zip(nodes, free_ports(count) if amqp else [None] * count, strict=True):
            node.amqp_port = port
            node.extra_args = list(extra_args)
            node.env = {**os.environ, **env} if env else None
            node.start(prefix)
        cluster = cls(nodes)
        try:
            wait_healthy(nodes)
        except ClusterError:
            cluster.stop()
            raise
        return cluster

    @property
    def urls(self) -> list[str]:
        """Every node's HTTP base URL."""
        return [n.url for n in self.nodes]

    @property
    def amqp_urls(self) -> list[str]:
        """Every AMQP listener's URL, logging in as the harness administrator."""
        return [
            f"amqp://{HARNESS_USER}:{HARNESS_PASSWORD}@{n.host}:{n.amqp_port}"
            for n in self.nodes
            if n.amqp_port
        ]

    def node(self, name: str) -> NodeProcess:
        """A node by name."""
        return next(n for n in self.nodes if n.name == name)

    def stop(self) -> None:
        """Stop every node, all at once: none hands its leadership to another that is stopping."""
        for node in self.nodes:
            node.terminate()
        for node in self.nodes:
            node.wait_stopped()

    def log_tails(self, lines: int = 40) -> str:
        """The end of every node's log, for failure reports."""
        parts = []
        for node in self.nodes:
            if node.log_path.exists():
                tail = node.log_path.read_text(errors="replace").splitlines()[-lines:]
                parts.append(f"--- {node.name} ---\n" + "\n".join(tail))
        return "\n".join(parts)
