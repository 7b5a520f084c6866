"""Whole nodes under one seed: real `Node`s, their clients and their faults in one virtual-time loop.

Every node is the `Node` that `quorumq server` runs (metadata group, queue hosting, doors, consumer
sessions, timers, membership, dead-letter workers, peer requests), given a simulated environment
(`cluster.node_environment`): a virtual wall clock with its own skew, the loop's time, randomness and
tokens drawn from the seed, a `SimulatedDatabase` that loses unsynced writes on power loss, and the
simulated network (`network.SimNetwork`). Clients (`clients.Clients`) enter where the HTTP handlers do.
Faults are crashes, graceful stops (leadership handed over first), power losses (one node or all),
partitions, broken links, restarts (on older builds too), a spare node joining and being forgotten
(`node_churn.NodeChurn`) and, once a run, a node's data directory lost (`_wipe_one`).

After the faults the network heals and every node runs; within a bound every queue must have a
leader that serves, every request must have been answered, every confirmed message must still be in
its queue or delivered, and every replica of a queue must hold what its leader holds.

    python -m node_simulation --first-seed 17 --seeds 1
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import random
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from aiohttp import web

from api.app import create_app
from cluster.config import Address, NodeConfig, Seed
from cluster.node import META_GROUP, Node
from cluster.node_environment import NodeEnvironment
from cluster.replication.entry_codec import QUEUE_OP_VERSION
from cluster.replication.raft_host import Group
from cluster.resource_usage import ResourceUsage
from cluster.store.store_damage import Damage
from metadata_state.codec import CODEC_VERSION as METADATA_CODEC_VERSION
from metadata_state.codec import OPERATOR_POLICY_CODEC_VERSION, POLICY_CODEC_VERSION
from node_simulation.clients import Clients
from node_simulation.history import Violation
from node_simulation.join_requester import SimJoinRequester
from node_simulation.network import SimNetwork
from node_simulation.node_churn import NodeChurn
from node_simulation.request_errors import NodeDown, NodeUnreachable
from node_simulation.virtual_loop import Overran, Process, Quiescent, VirtualLoop, process
from raft_log.confchange import apply_conf_change, decode_conf_change
from raft_log.errors import InvalidConfChangeError
from raft_log.storage.node_store import NodeStore
from raft_log.testing.simulated_database import SimulatedDatabase
from raft_log.types import ConfState, EntryKind, StorageError

T = TypeVar("T")

EPOCH_MS = 1_800_000_000_000  # the virtual wall clock starts here (2027), each node skewed from it
SECRET = "simulated-cluster-secret"
IDLE_SLACK_S = 10.0  # a leader elected after healing, and a few timer rounds
ANSWER_BOUND_S = 20.0  # every request a running node took is answered this long after healing
CLIENTS_BOUND_S = 120.0  # every client has finished its work this long after healing
REAL_LIMIT_S = 300.0  # real seconds a run may take (one takes about one): past it, it fails as overrun
OLDEST_BUILD = QUEUE_OP_VERSION - 3  # the oldest build a node is rolled back to
OLDEST_BUILD_METADATA = POLICY_CODEC_VERSION - 1  # which also predates policies (metadata codec 2)
OLDER_BUILD_METADATA = OPERATOR_POLICY_CODEC_VERSION - 1  # the other older builds predate operator policies
AMPLE_RESOURCES = ResourceUsage(disk_free=1 << 40, memory_used=1 << 28, memory_total=1 << 34)  # no alarm
REPLAY_CRASH = 0.25  # the share of restarts that crash again soon (while replaying, catching up)


_KILLED_TASK = "Task was destroyed but it is pending!"


class SimulationFatal(Exception):
    """A node hit an error production would exit on."""


@dataclass(frozen=True)
class Faults:
    """How hostile a run is: the weight of each fault between client steps (0: never)."""

    crash: int = 3
    power_loss: int = 2
    power_loss_all: float = 0.15  # the share of power losses that take every node down at once
    partition: int = 2
    break_link: int = 3
    heal: int = 4
    restart: int = 8
    change_build: int = 1  # a node restarted on an older build (a rollback), or back on the newest
    wipe: int = 1  # a node's data directory lost for good, the node started again on an empty one (once a
    # run, and only while every group it votes in keeps a majority without it: `loss_survivable`)
    calm: int = 20
    join: int = 2  # the spare node joins (on an empty data directory)
    forget: int = 4  # the spare node stops for good and is forgotten (`loss_survivable`)
    stop: int = 2  # a node hands leadership over and stops, as `quorumq server` does when told to
    mean_gap_s: float = 0.4  # virtual time between two faults, on average


@dataclass
class SimStats:
    """What a run did."""

    crashes: int = 0
    stops: int = 0
    power_losses: int = 0
    partitions: int = 0
    broken_links: int = 0
    restarts: int = 0
    rollbacks: int = 0
    metadata_rollbacks: int = 0  # rollbacks to a build that predates the metadata codec's newest version
    wipes: int = 0
    joins: int = 0
    forgets: int = 0
    requests: int = 0
    confirmed: int = 0
    delivered: int = 0
    oversized: int = 0
    frames: int = 0

    def add(self, other: SimStats) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass(eq=False)
class SimNode:
    """One node: its disk outlives its processes."""

    name: str
    config: NodeConfig
    db: SimulatedDatabase = field(default_factory=SimulatedDatabase)
    process: Process | None = None
    node: Node | None = None
    context: contextvars.Context | None = None
    app: web.Application | None = None  # the API the node serves, once started
    reads: int = QUEUE_OP_VERSION  # the newest queue operations version its build reads
    reads_metadata: int = METADATA_CODEC_VERSION  # the newest metadata codec version its build reads
    incarnation: int = 0  # how many times its data directory was wiped
    requests: dict[asyncio.Future[Any], None] = field(default_factory=dict)  # answers awaited, in order
    serving: dict[asyncio.Task[Any], float] = field(default_factory=dict)  # requests being served: since

    @property
    def running(self) -> Node | None:
        """The node, while its process runs and has started."""
        alive = self.process is not None and self.process.alive and self.app is not None
        return self.node if alive else None


class NodeSimulation:
    """A seeded run of `nodes` whole nodes."""

    def __init__(self, seed: int, nodes: int = 4, faults: Faults | None = None) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.faults = faults or Faults()
        self.loop = VirtualLoop()
        self.loop.set_exception_handler(self._on_loop_error)
        self.network = SimNetwork(self.loop, random.Random(self.rng.getrandbits(64)))
        self.stats = SimStats()
        self.errors: list[str] = []
        self._dir = tempfile.TemporaryDirectory(prefix=f"quorumq-sim-{seed}-")
        names = [f"n{i}" for i in range(1, nodes + 1)]
        seeds = tuple(Seed(name, Address(name, 7000)) for name in names)
        # snapshots (and their installs) come often or rarely, by the seed
        self._snapshot_every = (self.rng.randrange(20, 2000), self.rng.randrange(64 << 10, 16 << 20))
        self.nodes = {name: SimNode(name, self._config(name, seeds)) for name in names}
        self._skew_ms = {name: self.rng.randrange(-500, 500) for name in names}
        self.clients = Clients(self, random.Random(self.rng.getrandbits(64)))
        self._joiner = SimJoinRequester(self)
        # the spare draws from a random of its own: a run without churn draws as before there was any
        spare = f"n{nodes + 1}"
        churn_rng = random.Random(f"churn-{seed}")
        self._skew_ms[spare] = churn_rng.randrange(-500, 500)
        self.churn = NodeChurn(self, SimNode(spare, self._config(spare, ())), churn_rng)
        self.lost: set[str] = set()  # nodes stopped for good and forgotten (or being forgotten)
        self._healed = False

    def _config(self, name: str, seeds: tuple[Seed, ...]) -> NodeConfig:
        return NodeConfig(
            name,
            Path(self._dir.name) / name,
            Address(name, 8080),
            Address(name, 7000),
            seeds=seeds,
            cluster_secret=SECRET,
            consumer_idle_timeout_ms=5_000,
            consumer_timeout_ms=60_000,
            snapshot_every_entries=self._snapshot_every[0],
            snapshot_every_bytes=self._snapshot_every[1],
            target_group_size=3,  # leaders grow what the operator shrinks (and shrink what it grows)
            membership_interval_ms=3_000,
            membership_trigger_delay_ms=1_000,
        )

    # -- running ------------------------------------------------------------------------------------

    def run(self, duration_s: float, real_limit_s: float = REAL_LIMIT_S) -> SimStats:
        """Faults and clients for `duration_s` of virtual time, then heal and check; a run that takes more
        than `real_limit_s` of real time fails (a watchdog for runs that never end)."""
        self.loop.limit_real_time(real_limit_s)
        try:
            self.loop.run_until_complete(self._run(duration_s))
            if self.errors:
                raise Violation(self.errors[0])
        except Quiescent as exc:
            raise self._failure(f"the cluster went quiet with work left: {exc}") from exc
        except Overran as exc:
            raise self._failure(str(exc)) from exc
        except Violation as exc:
            raise self._failure(str(exc)) from exc
        finally:
            self.stats.frames = self.network.delivered
            self._close()
        return self.stats

    def _failure(self, what: str) -> Violation:
        """A violation as a failing seed reports it: where in virtual time, and the run's digest (equal
        when the seed is run again)."""
        where = f"at {self.loop.time():.3f} s, {self.network.delivered} frames, {self.trace_digest[:16]}"
        return Violation(f"seed {self.seed}: {what} ({where})")

    @property
    def trace_digest(self) -> str:
        """A digest of every frame delivered so far, in order."""
        return self.network.trace.hexdigest()

    async def _run(self, duration_s: float) -> None:
        for node in self.nodes.values():
            self.start(node)
        clients = self.clients.start()
        end = self.loop.time() + duration_s
        while self.loop.time() < end and not self.errors:
            await asyncio.sleep(self.rng.expovariate(1 / self.faults.mean_gap_s))
            self._fault()
        self.clients.stop_making_requests()
        await self.heal()
        healed = self.loop.time()
        await self._clients_finish(clients, healed)
        idle_bound_s = self.nodes["n1"].config.consumer_idle_timeout_ms / 1000 + IDLE_SLACK_S
        await self.clients.check_after_heal(idle_bound_s)
        await asyncio.sleep(max(0.0, healed + ANSWER_BOUND_S - self.loop.time()))
        self._check_answered(healed)

    async def _clients_finish(self, clients: list[asyncio.Task[None]], healed: float) -> None:
        """Every client ends its work within the bound after healing (a client failing fails the run): a
        queue that can never be declared, or a request retried for ever, is a cluster that does not
        recover."""
        _, busy = await asyncio.wait(clients, timeout=CLIENTS_BOUND_S)
        for task in clients:
            if task.done():
                task.result()  # a client's own violation comes first
        if busy:
            stuck = sorted(task.get_coro().__qualname__ for task in busy)  # type: ignore[union-attr]
            raise Violation(f"clients busy {CLIENTS_BOUND_S} s after healing (at {healed:.3f} s): {stuck}")

    def _check_answered(self, healed: float) -> None:
        """Every request a running node took has been answered within the bound after healing."""
        for node in self.nodes.values():
            if node.running is None:
                continue
            for task, since in node.serving.items():
                if not task.done():
                    raise Violation(
                        f"{node.name} took a request at {since:.3f} s and has not answered it "
                        f"{ANSWER_BOUND_S} s after healing (at {healed:.3f} s): {task.get_coro()}"
                    )

    def _fault(self) -> None:
        f = self.faults
        actions: list[tuple[Callable[[], None], int]] = [
            (self._crash_one, f.crash),
            (self._power_loss, f.power_loss),
            (self._partition, f.partition),
            (self._break_link, f.break_link),
            (self.network.heal, f.heal),
            (self._restart_one, f.restart),
            (self._change_build, f.change_build),
            (self._wipe_one, f.wipe),
            (lambda: None, f.calm),
            (self.churn.join, f.join),  # last: without churn (weight 0) the choices draw as before
            (self.churn.forget, f.forget),
            (self._stop_one, f.stop),
        ]
        action = self.rng.choices([a for a, _ in actions], [w for _, w in actions])[0]
        action()

    async def heal(self) -> None:
        """Heal the network, restart every node of an older build on the newest (the end of a rolling
        upgrade) and start every node that is down; no fault comes after."""
        self._healed = True
        self.network.heal()
        for node in self.nodes.values():
            if node.reads != QUEUE_OP_VERSION:
                self.kill(node)
                node.reads, node.reads_metadata = QUEUE_OP_VERSION, METADATA_CODEC_VERSION
        for node in self._down():
            self.start(node)

    def _down(self) -> list[SimNode]:
        return [n for n in self.nodes.values() if n.process is None or not n.process.alive]

    def _close(self) -> None:
        for node in self.nodes.values():
            if node.process is not None:
                node.process.kill()
        self.loop.close()
        self._dir.cleanup()

    def _on_loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        task = context.get("task") or context.get("future")
        if isinstance(exc, asyncio.CancelledError) or context.get("message") == _KILLED_TASK:
            return  # a task of a killed process is left pending for ever, as the process was killed
        self.errors.append(f"{context.get('message')}: {exc!r} in {task!r}")

    # -- node processes -----------------------------------------------------------------------------

    def start(self, node: SimNode) -> None:
        """Start a process of `node` on what its disk holds."""
        proc = Process(node.name)
        context = contextvars.copy_context()
        context.run(process.set, proc)
        rng = random.Random(self.rng.getrandbits(64))
        skew = self._skew_ms[node.name]
        env = NodeEnvironment(
            wall_ms=lambda: EPOCH_MS + skew + int(self.loop.time() * 1000),
            monotonic_ms=lambda: self.loop.time() * 1000,
            rng=rng,
            new_token=lambda: f"{rng.getrandbits(128):032x}",
            open_store=lambda _dir, _now: self._open_store(node),
            transport=self.network.transport,
            on_fatal=_fatal,
            read_usage=lambda _data_dir: AMPLE_RESOURCES,
            on_damage=lambda _data_dir, error: _fatal(f"database damaged at runtime: {error}"),
            reads_queue_ops=node.reads,
            reads_metadata=node.reads_metadata,
        )
        node.process, node.context, node.app = proc, context, None
        node.node = context.run(Node, node.config, joiner=self._joiner, environment=env)
        self.loop.create_task(self._boot(node, node.node), context=context)
        self.stats.restarts += 1

    async def _boot(self, sim_node: SimNode, node: Node) -> None:
        """Start the node and its API, as `quorumq server` does (the API serves no socket here)."""
        await node.start()
        sim_node.app = create_app(node)

    def node_at(self, url: str) -> str:
        """The name of the node whose API is at `url`."""
        return next(name for name, node in self.nodes.items() if node.config.http_url == url)

    def app_of(self, node: Node) -> web.Application:
        """The API of a running node."""
        app = self.nodes[node.name].app
        assert app is not None, f"{node.name} serves no API"
        return app

    def _open_store(self, node: SimNode) -> tuple[NodeStore, Damage | None]:
        node.db.reopen()
        return NodeStore.recover(node.db, lambda: f"{node.name}.{node.incarnation}"), None

    def kill(self, node: SimNode, *, power_loss: bool = False, graceful: bool = False) -> None:
        """The process dies (as SIGKILL); with `power_loss` the disk also loses what was not synced.
        `graceful`: it ends after a stop's hand-over instead (counted as a stop, not a crash)."""
        if node.process is not None and node.process.alive:
            node.process.kill()
            node.db.close()
            self.network.detach(node.name)
            for answer in node.requests:
                if not answer.done():
                    answer.set_exception(NodeDown(f"{node.name} died before answering"))
                    answer.exception()  # its waiter may have died too: not an error left unseen
            node.requests.clear()
            node.serving.clear()
            self.stats.crashes += not power_loss and not graceful
            self.stats.stops += graceful
        if power_loss:
            node.db.lose_power(self.rng.randrange(node.db.unsynced_writes + 1))

    async def request(self, name: str, call: Callable[[Node], Awaitable[T]]) -> T:
        """Run `call` on node `name` as its server would run a client's request: in its process, the
        caller seeing NodeDown when the process dies first (and NodeError answers as they come)."""
        node = self.nodes.get(name)
        running = node.running if node is not None else None
        if node is None or running is None or node.context is None:
            raise NodeUnreachable(f"{name} is down")
        self.stats.requests += 1
        answer: asyncio.Future[T] = self.loop.create_future()
        node.requests[answer] = None

        async def serve() -> T:
            return await call(running)  # raising at once (NotLeader) is an answer too

        task = self.loop.create_task(serve(), context=node.context.copy())
        node.serving[task] = self.loop.time()

        def done(finished: asyncio.Task[T]) -> None:
            node.requests.pop(answer, None)
            node.serving.pop(finished, None)
            exc = None if finished.cancelled() else finished.exception()  # retrieved, answer awaited or not
            if answer.done():
                return  # the client stopped waiting
            if finished.cancelled():
                answer.set_exception(NodeDown(f"{name} cancelled the request"))
            elif exc is not None:
                answer.set_exception(exc)
                answer.exception()  # its waiter may be a task of a process killed meanwhile
            else:
                answer.set_result(finished.result())

        task.add_done_callback(done, context=contextvars.Context())  # runs whoever asked (even dead)
        return await answer

    # -- faults -------------------------------------------------------------------------------------

    def _alive(self) -> list[SimNode]:
        return [n for n in self.nodes.values() if n.running is not None]

    def _crash_one(self) -> None:
        alive = self._alive()
        if len(alive) > 1:
            self.kill(self.rng.choice(alive))

    def _stop_one(self) -> None:
        """A node told to stop: it hands leadership over (`Node.hand_over_leadership`), then its process
        ends, losing nothing (unless another fault came first)."""
        alive = self._alive()
        if len(alive) > 1:
            node = self.rng.choice(alive)
            if node.running is not None and node.context is not None:
                stopping = node.running.hand_over_leadership()
                task = self.loop.create_task(stopping, context=node.context.copy())
                proc = node.process
                task.add_done_callback(lambda _: self._end_stop(node, proc))

    def _end_stop(self, node: SimNode, proc: Process | None) -> None:
        """The stop's process ends, unless it died first or the run healed meanwhile (it keeps running)."""
        if node.process is proc and proc is not None and proc.alive and not self._healed:
            self.kill(node, graceful=True)

    def _power_loss(self) -> None:
        victims = list(self.nodes.values())
        if self.rng.random() >= self.faults.power_loss_all:
            victims = [self.rng.choice(victims)]
        for node in victims:
            self.kill(node, power_loss=True)
        self.stats.power_losses += 1

    def _restart_one(self) -> None:
        down = self._down()
        if down:
            node = self.rng.choice(down)
            self.start(node)
            if self.rng.random() < REPLAY_CRASH:
                proc = node.process
                self.loop.call_later(self.rng.uniform(0.0, 0.3), self._kill_process, node, proc)

    def _change_build(self) -> None:
        """Restart a node on an older build (a rollback: its replicas halt at entries newer than it
        reads, and the cluster writes what it reads once it says so; the oldest also predates policies,
        so its metadata group halts at a command of the newer codec) or, if it runs one, on the newest."""
        node = self.rng.choice(list(self.nodes.values()))
        self.kill(node)
        if node.reads == QUEUE_OP_VERSION:
            node.reads = QUEUE_OP_VERSION - self.rng.randint(1, 3)
            oldest = node.reads == OLDEST_BUILD
            node.reads_metadata = OLDEST_BUILD_METADATA if oldest else OLDER_BUILD_METADATA
            self.stats.rollbacks += 1
            self.stats.metadata_rollbacks += oldest
        else:
            node.reads, node.reads_metadata = QUEUE_OP_VERSION, METADATA_CODEC_VERSION
        self.start(node)

    def _wipe_one(self) -> None:
        """Kill a node and lose its data directory (database and `node.json`); it starts again empty, as
        a new incarnation the others replace its old replicas with. Once a run, and only a node whose
        loss leaves every group a majority of its voters (`loss_survivable`)."""
        if self.stats.wipes:
            return
        candidates = [node for node in self.nodes.values() if self.loss_survivable(node.name)]
        if not candidates:
            return
        node = self.rng.choice(candidates)
        self.kill(node)
        node.db = SimulatedDatabase()
        node.incarnation += 1
        shutil.rmtree(node.config.data_dir)
        node.config.data_dir.mkdir(parents=True)
        self.stats.wipes += 1
        self.start(node)

    def loss_survivable(self, name: str) -> bool:
        """Whether Raft can keep every group's promise without what node `name` holds: each configuration
        that lists it as a voter, in force on a replica or ahead in its log, lists at least two others (a
        majority of the group without it), all members of the cluster now (none forgotten) and recorded
        as the incarnation each runs as (`_loses_one_of_many`). A group of two voters that loses one for
        good, or of one, has no majority left: no node can elect a leader for it (nor should,
        docs/operate/operations.md). A member wiped before its incarnation is recorded is taken for the
        replica it was: a limit left open (docs/operate/membership.md, "Incarnations"). Every node must
        run and host every replica its database holds, so that each can be read (a down one's log, or a
        replica its node does not run while its metadata is behind or halted on an older build, may hold
        a change nobody else has)."""
        running = {sim_node.name: sim_node.running for sim_node in self.nodes.values()}
        if any(node is None or node.store is None or node.host is None for node in running.values()):
            return False
        runs_as = {other: node.store.incarnation for other, node in running.items() if node and node.store}
        for node in running.values():
            assert node is not None and node.host is not None and node.store is not None
            if set(node.store.group_ids()) - set(node.host.groups):
                return False
            for group in list(node.host.groups.values()):
                confs = _confs_ahead(group)
                if confs is None or any(
                    name in c.voters and not _loses_one_of_many(c, name, runs_as) for c in confs
                ):
                    return False
        return True

    def _kill_process(self, node: SimNode, proc: Process | None) -> None:
        if node.process is proc and not self._healed:
            self.kill(node, power_loss=self.rng.random() < 0.5)

    def _partition(self) -> None:
        self.network.partition({name: self.rng.randrange(2) for name in self.nodes})
        self.stats.partitions += 1

    def _break_link(self) -> None:
        a, b = self.rng.sample(sorted(self.nodes), 2)
        self.network.break_link(a, b)
        self.stats.broken_links += 1

    # -- reading the cluster ------------------------------------------------------------------------

    def meta_leader(self) -> Node | None:
        for sim in self.nodes.values():
            node = sim.running
            if node is not None and node.host is not None:
                group = node.host.groups.get(META_GROUP)
                if group is not None and group.raft.is_leader:
                    return node
        return None


def _confs_ahead(group: Group) -> list[ConfState] | None:
    """Every configuration of `group` as its replica has it: in force, then after each change its log
    holds beyond what it applied; None when the log cannot tell (entries the core has not handed over
    yet, a snapshot being installed)."""
    confs = [group.conf, group.raft.conf]
    last = group.log.last_index()
    if group.raft.status().last_index > last:
        return None
    try:
        conf = group.conf  # as of `group.applied`
        for entry in group.log.entries(group.applied + 1, last + 1) if last > group.applied else []:
            if entry.kind == EntryKind.CONF_CHANGE:
                conf = apply_conf_change(conf, decode_conf_change(entry.data))
                confs.append(conf)
    except (StorageError, InvalidConfChangeError):
        return None
    return confs


def _loses_one_of_many(conf: ConfState, name: str, runs_as: dict[str, str]) -> bool:
    """Whether `conf` keeps a majority of whole voters without voter `name`: three voters or more, each
    running (none lost) and recorded as the incarnation it runs as (`name` must be; another may be
    recorded as none, the window `docs/operate/membership.md` leaves open)."""
    if len(conf.voters) < 3 or conf.incarnation_of(name) != runs_as.get(name):
        return False
    return all(v in runs_as and conf.incarnation_of(v) in (None, runs_as[v]) for v in conf.voters)


def _fatal(what: str) -> NoReturn:
    raise SimulationFatal(what)


def quiet_logs() -> None:
    """Nodes log as they run; a simulation shows only errors."""
    logging.getLogger().setLevel(logging.ERROR)
