"""The cluster under test: one `quorumq server` process per namespace host, and what nemeses do to it.

With `lazy_fs`, each node's data directory is the mountpoint of its own lazy filesystem
(`lazy_mount.py`), mounted before the node starts and unmounted after every node has stopped, so a
power failure can drop what the node had not fsynced. Its durable state lives in
`<data_dir>/lazyfs/<node>`.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
from pathlib import Path

from cli.node_processes import NodeProcess, ProcessCluster, plan_cluster, wait_healthy, wait_until
from jepsen_tests.client_life import ClientCrasher
from jepsen_tests.fake_clocks import FakeClocks
from jepsen_tests.hosts import Host, NetnsHosts
from jepsen_tests.lazy_control import ControlError
from jepsen_tests.lazy_mount import LazyMount
from jepsen_tests.network_faults import heal_partitions, restore_link
from quorumq import QuorumqError, SyncClient

HTTP_PORT = 8080
RAFT_PORT = 9080
AMQP_PORT = 5672
READY_TIMEOUT_S = 90.0


class JepsenCluster:
    """Node processes on `hosts` (node i in namespace i), their data under `data_dir` (on lazy
    filesystems with `lazy_fs`); with `fake_clocks`, every node runs under a wall clock the clock
    nemesis can move (`clocks`); with `amqp`, every node has an AMQP listener on AMQP_PORT."""

    def __init__(
        self,
        hosts: NetnsHosts,
        data_dir: Path,
        *,
        lazy_fs: bool = False,
        fake_clocks: bool = False,
        amqp: bool = False,
    ) -> None:
        self.hosts = hosts
        count = len(hosts.hosts)
        self.processes = ProcessCluster(
            plan_cluster(
                count,
                data_dir,
                hosts=[h.address for h in hosts.hosts],
                ports=[HTTP_PORT] * count + [RAFT_PORT] * count,
            )
        )
        for node in self.nodes:
            node.supervised = True  # as under compose: a node that found damage is started again
            node.amqp_port = AMQP_PORT if amqp else None
        self.paused: set[str] = set()
        self.clients: ClientCrasher | None = None  # the running workload, for the `client` nemesis
        self.clocks = FakeClocks(data_dir / "clocks", self.names) if fake_clocks else None
        if self.clocks is not None:
            for node in self.nodes:
                node.env = self.clocks.env(node.name)
        self.mounts = {
            node.name: LazyMount(
                node.data_dir, data_dir / "lazyfs" / node.name, data_dir / "logs" / f"{node.name}-lazyfs.log"
            )
            for node in self.nodes
            if lazy_fs
        }

    @property
    def nodes(self) -> list[NodeProcess]:
        """Every node process."""
        return self.processes.nodes

    @property
    def names(self) -> list[str]:
        """Every node name."""
        return [n.name for n in self.nodes]

    @property
    def urls(self) -> list[str]:
        """Every node's HTTP base URL (reachable from the root namespace)."""
        return self.processes.urls

    @property
    def amqp_urls(self) -> list[str]:
        """Every node's AMQP URL, logging in as the harness administrator (none without listeners)."""
        return self.processes.amqp_urls

    def node(self, name: str) -> NodeProcess:
        """A node by name."""
        return self.processes.node(name)

    def host(self, name: str) -> Host:
        """A node's host."""
        return self.hosts.host(name)

    def start(self, name: str) -> None:
        """Start a node inside its namespace (`ip netns exec` execs, so the PID is the node's)."""
        self.node(name).start(self.host(name).exec_prefix())

    def start_all(self, timeout: float = READY_TIMEOUT_S) -> None:
        """Mount the lazy filesystems, start every node and wait until all are healthy."""
        for mount in self.mounts.values():
            if not mount.running:
                mount.start()
        for name in self.names:
            self.start(name)
        wait_healthy(self.nodes, timeout)

    def kill(self, name: str) -> None:
        """SIGKILL a node (a paused one too)."""
        self.paused.discard(name)
        self.node(name).kill()

    def power_off(self, name: str) -> dict[str, int]:
        """A power failure: SIGKILL the node, then drop what it had not fsynced (its data directory
        then holds exactly its durable state). Returns what was dropped (`LazyState.stats`)."""
        mount = self._mount(name, "a power failure")
        self.kill(name)
        return mount.discard()

    def fill_disk(self, name: str, free: int) -> dict[str, int]:
        """Fill the node's disk but for `free` bytes (its lazy filesystem's capacity); returns the bytes
        used and that capacity."""
        return self._mount(name, "a full disk").fill(free)

    def unfill_disk(self, name: str) -> None:
        """Give the node's disk its room back."""
        self._mount(name, "a full disk").unfill()

    def _mount(self, name: str, fault: str) -> LazyMount:
        if name not in self.mounts:
            raise RuntimeError(f"{fault} needs the nodes on lazy filesystems (JepsenCluster lazy_fs)")
        return self.mounts[name]

    def restart(self, name: str) -> None:
        """Start a node again if it is not running."""
        if not self.node(name).running:
            self.start(name)

    def pause(self, name: str) -> None:
        """SIGSTOP: the node freezes with its sockets open."""
        self.node(name).signal(signal.SIGSTOP)
        self.paused.add(name)

    def resume(self, name: str) -> None:
        """SIGCONT a paused node."""
        self.node(name).signal(signal.SIGCONT)
        self.paused.discard(name)

    def queue_leader(self, queue: str) -> str | None:
        """The queue's leader as the cluster reports it now, or None when nobody answers."""
        try:
            with SyncClient(self.urls, timeout=3.0, connect_timeout=1.0) as client:
                return client.queue(queue).get("leader")
        except QuorumqError:
            return None

    def queue_members(self, queue: str) -> list[str]:
        """The nodes holding a replica of the queue now, or [] when nobody answers."""
        try:
            with SyncClient(self.urls, timeout=5.0, connect_timeout=1.0) as client:
                return [row["node"] for row in client.members(queue)["members"]]
        except (QuorumqError, KeyError, TypeError):
            return []

    def members_all_up(self, queue: str) -> bool:
        """True when the queue's leader has a live connection to every member (so a removal can keep a
        live majority); False when nobody answers."""
        try:
            with SyncClient(self.urls, timeout=5.0, connect_timeout=1.0) as client:
                return all(row.get("up") for row in client.members(queue)["members"])
        except (QuorumqError, KeyError, TypeError):
            return False

    def change_member(self, queue: str, node: str, *, add: bool) -> str:
        """Add or remove a replica; 'ok', or the refusal (no quorum, change running, ...) as text."""
        try:
            with SyncClient(self.urls, timeout=15.0, connect_timeout=1.0) as client:
                if add:
                    client.add_member(queue, node)
                else:
                    client.delete_member(queue, node)
        except QuorumqError as exc:
            return f"refused: {exc.code}"
        return "ok"

    def heal_everything(self) -> None:
        """Resume paused nodes, remove drop rules and netem, set clocks right, give full disks their room
        back, restart dead nodes."""
        if self.clocks is not None:
            self.clocks.reset_all()
        for mount in self.mounts.values():
            with contextlib.suppress(ControlError):  # a daemon gone holds no capacity
                mount.unfill()
        for name in list(self.paused):
            self.resume(name)
        heal_partitions(self.hosts)
        for host in self.hosts.hosts:
            restore_link(host)
        for name in self.names:
            self.restart(name)

    def wait_for_quorum(self, queues: list[str], timeout: float = READY_TIMEOUT_S) -> None:
        """Wait until every node is healthy and every queue answers through its leader."""
        wait_healthy(self.nodes, timeout)

        def queues_led() -> bool:
            return all(self.queue_leader(q) is not None for q in queues)

        wait_until(queues_led, timeout, "every queue to have a leader", self.nodes)

    def stop_all(self) -> None:
        """Resume and stop every node (SIGTERM, then SIGKILL if needed), then unmount their lazy
        filesystems (also when stopping a node failed)."""
        try:
            for name in list(self.paused):
                self.resume(name)
            for node in self.nodes:
                node.stop(timeout=10.0)
        finally:
            for mount in self.mounts.values():
                mount.stop()

    def remove_data(self) -> None:
        """Delete every node's data directory and lazy filesystem store (after `stop_all`)."""
        for node in self.nodes:
            shutil.rmtree(node.data_dir, ignore_errors=True)
        for mount in self.mounts.values():
            shutil.rmtree(mount.store_dir, ignore_errors=True)
