"""One Jepsen-style run: hosts, cluster, workload under a fault schedule, heal, drain, check, report."""

from __future__ import annotations

import asyncio
import random
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from jepsen_tests.availability import PublishGap, publish_gaps
from jepsen_tests.checker import TotalQueueVerdict, check_total_queue
from jepsen_tests.cluster import JepsenCluster
from jepsen_tests.convergence import Convergence, wait_for_convergence
from jepsen_tests.fake_clocks import INSTALL_HINT, libfaketime
from jepsen_tests.history import HistoryWriter, read_history
from jepsen_tests.hosts import HostsUnavailable, NetnsHosts, unavailable_reason
from jepsen_tests.nemesis import nemeses_named
from jepsen_tests.nemesis_log import NemesisLog, read_fault_spans
from jepsen_tests.provenance import Provenance, provenance
from jepsen_tests.schedule import FaultWindow, plan_schedule
from jepsen_tests.workload import (
    FANOUT_PROBABILITY,
    GROUPS_PROBABILITY,
    GROUPS_QUEUE,
    RESEND_PROBABILITY,
    Workload,
    WorkloadConfig,
    dead_letter_queue,
)
from quorumq import SyncClient

DRAIN_TIMEOUT_S = 90.0
CONVERGENCE_TIMEOUT_S = 30.0
HONEST_TTL_MARGIN_S = 600.0
AMQP_PUBLISHERS = 2
"""How many publishers more the AMQP client mode runs."""
DEDUPE_WINDOW_MS = 7 * 24 * 3600 * 1000
"""The work queues' deduplication window: longer than any run plus any clock fault (a day at most)."""


@dataclass(frozen=True)
class RunConfig:
    """What to run: workload seconds, nemesis families (every family by default), seed, node count,
    queues (1-3 from the seed), and whether AMQP clients join the workload."""

    duration: float = 60.0
    nemeses: tuple[str, ...] = (
        "partition",
        "kill",
        "pause",
        "netem",
        "membership",
        "corrupt",
        "clock",
        "client",
        "power",
        "disk",
    )
    seed: int = 0
    nodes: int = 5
    queues: int | None = None
    publishers: int = 4
    consumers: int = 3
    out_dir: Path = Path("runs")
    keep_data: bool = False
    amqp: bool = False  # AMQP client mode: AMQP_PUBLISHERS and a consumer of the first work queue and
    # of the grouped queue more, over AMQP 0-9-1 to the nodes' listeners

    @property
    def lazy_fs(self) -> bool:
        """Whether the nodes' data directories go on lazy filesystems: when a nemesis needs them."""
        return any(getattr(n, "needs_lazy_fs", False) for n in nemeses_named(self.nemeses))


@dataclass
class RunResult:
    """The verdict of one run and where its report is."""

    run_dir: Path
    config: RunConfig
    queues: tuple[str, ...]
    schedule: list[FaultWindow]
    verdict: TotalQueueVerdict
    convergence: Convergence
    provenance: Provenance
    drain_left: dict[str, int] = field(default_factory=dict)
    availability: list[PublishGap] = field(default_factory=list)
    expired: dict[str, int] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """The checker found the history valid, nothing expired early, and the replicas agree."""
        return self.verdict.valid and self.convergence.agreed and not any(self.expired.values())


def run(config: RunConfig, progress: Callable[[str], None] = print, command: str | None = None) -> RunResult:
    """Run one schedule end to end, started by `command` (by default the equivalent `quorumq-jepsen run`
    line); raises HostsUnavailable when this machine cannot host it."""
    nemeses_named(config.nemeses)
    reason = unavailable_reason()
    if not reason and "clock" in config.nemeses and libfaketime() is None:
        reason = f"the clock nemesis needs libfaketime ({INSTALL_HINT})"
    if reason:
        raise HostsUnavailable(reason)
    origin = provenance(command or equivalent_command(config))
    run_dir = new_run_dir(config)
    rng = random.Random(config.seed)
    queues = tuple(f"jepsen-{i}" for i in range(config.queues or rng.randint(1, 3)))
    workload_config = WorkloadConfig(
        queues,
        config.publishers,
        config.consumers,
        resend_probability=RESEND_PROBABILITY,
        fanout_probability=FANOUT_PROBABILITY,
        groups_probability=GROUPS_PROBABILITY,
        amqp_publishers=AMQP_PUBLISHERS if config.amqp else 0,
        amqp_consumed=(queues[0], GROUPS_QUEUE) if config.amqp else (),
    )
    schedule = plan_schedule(config.seed, config.duration, config.nemeses)
    progress(f"run {run_dir}: {config.nodes} nodes, queues {', '.join(queues)}, {len(schedule)} faults")
    with NetnsHosts(config.nodes) as hosts:
        cluster = JepsenCluster(
            hosts,
            run_dir / "data",
            lazy_fs=config.lazy_fs,
            fake_clocks="clock" in config.nemeses,
            amqp=config.amqp,
        )
        try:
            cluster.start_all()
            ttl_ms = honest_ttl_ms(config.duration)
            declare_queues(cluster, workload_config.consumed_queues, ttl_ms, workload_config.grouped_queues)
            progress(f"cluster ready on bridge {hosts.bridge}; workload and nemeses running")
            history = HistoryWriter(run_dir / "history.jsonl")
            try:
                drain_left, expired, convergence = asyncio.run(
                    exercise(cluster, workload_config, schedule, config, history, rng, progress)
                )
            finally:
                history.close()
        finally:
            cluster.stop_all()
            if not config.keep_data:
                cluster.remove_data()
    history_ops, faults = read_history(run_dir / "history.jsonl"), read_fault_spans(run_dir / "nemesis.jsonl")
    verdict = check_total_queue(history_ops, faults)
    availability = publish_gaps(history_ops, faults)
    return RunResult(
        run_dir, config, queues, schedule, verdict, convergence, origin, drain_left, availability, expired
    )


def new_run_dir(config: RunConfig) -> Path:
    """A fresh directory under `out_dir` named after the time, seed and node count."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = config.out_dir / f"{stamp}-seed{config.seed}-n{config.nodes}"
    run_dir, suffix = base, 1
    while run_dir.exists():
        run_dir, suffix = base.with_name(f"{base.name}-{suffix}"), suffix + 1
    run_dir.mkdir(parents=True)
    return run_dir


def honest_ttl_ms(duration: float) -> int:
    """A message TTL no message reaches in an honest run of `duration` seconds (drain included)."""
    return int((HONEST_TTL_MARGIN_S + 2 * duration) * 1000)


def declare_queues(
    cluster: JepsenCluster, queues: Sequence[str], ttl_ms: int, grouped: Sequence[str] = ()
) -> None:
    """Declare each queue with a replica on every node, so every fault touches it, and an
    at-least-once dead-letter queue that the workload's rejections go to. Both get a TTL
    (`honest_ttl_ms`) that only leader time running ahead (a clock fault) can reach; the dead-letter
    queue, read only by the final drain, holds a backlog of ready messages for such a fault to
    expire. `expired_early` counts expiries. A work queue deduplicates by message id over
    DEDUPE_WINDOW_MS (`jepsen_tests.message_ids`). The fanout exchange's queues are declared so too
    (the workload's publishers declare the exchange and bind them), and so are the `grouped` ones, with
    `x-message-groups` (their dead-letter queues without: they order nothing)."""
    common = {"x-quorum-initial-group-size": len(cluster.nodes), "x-message-ttl": ttl_ms}
    with SyncClient(cluster.urls, timeout=30.0) as client:
        for queue in queues:
            client.declare(dead_letter_queue(queue), common)
            client.declare(
                queue,
                {
                    **common,
                    "x-dead-letter-queue": dead_letter_queue(queue),
                    "x-dead-letter-strategy": "at-least-once",
                    "x-overflow": "reject-publish",
                    "x-dedupe-window": DEDUPE_WINDOW_MS,
                    **({"x-message-groups": True} if queue in grouped else {}),
                },
            )


async def exercise(
    cluster: JepsenCluster,
    workload_config: WorkloadConfig,
    schedule: list[FaultWindow],
    config: RunConfig,
    history: HistoryWriter,
    rng: random.Random,
    progress: Callable[[str], None],
) -> tuple[dict[str, int], dict[str, int], Convergence]:
    """Workload under the schedule (its faults aimed at the work queues), then heal, wait for quorum,
    drain, count early expiries and compare the replicas of every queue the workload consumes."""
    log = NemesisLog(history.path.with_name("nemesis.jsonl"), history.now)
    queues, consumed = workload_config.queues, workload_config.consumed_queues
    workload = Workload(cluster.urls, history, workload_config, rng, cluster.amqp_urls)
    cluster.clients = workload
    stop = asyncio.Event()
    clients = asyncio.create_task(workload.run(stop))
    try:
        await run_schedule(cluster, queues, schedule, config.seed, log, progress)
        await asyncio.sleep(max(0.0, config.duration - history.now()))
    finally:
        stop.set()
        await clients
        await asyncio.to_thread(cluster.heal_everything)
        log.write("heal-all")
    progress("healed; waiting for quorum")
    await asyncio.to_thread(cluster.wait_for_quorum, list(consumed))
    log.write("quorum")
    progress("draining")
    drain_left = await workload.drain(DRAIN_TIMEOUT_S)
    log.write("drained", left=drain_left)
    every_queue = [*consumed, *(dead_letter_queue(q) for q in consumed)]
    expired = await asyncio.to_thread(expired_early, cluster, every_queue)
    node_urls = {node.name: node.url for node in cluster.nodes}
    convergence = await wait_for_convergence(node_urls, consumed, CONVERGENCE_TIMEOUT_S)
    return drain_left, expired, convergence


def expired_early(cluster: JepsenCluster, queues: Sequence[str]) -> dict[str, int]:
    """Messages each queue expired (dead-lettered or dropped as `expired`): its TTL outlasts an honest
    run, so any is a message expired early, which the dead-letter drain would otherwise hide (a
    dead-letter queue's expired messages are also lost values for the checker)."""
    with SyncClient(cluster.urls, timeout=30.0) as client:
        stats = {queue: client.queue(queue) for queue in queues}
    return {
        queue: row["dead_lettered"].get("expired", 0) + row["dropped"].get("expired", 0)
        for queue, row in stats.items()
    }


async def run_schedule(
    cluster: JepsenCluster,
    queues: Sequence[str],
    schedule: list[FaultWindow],
    seed: int,
    log: NemesisLog,
    progress: Callable[[str], None],
) -> None:
    """Start and heal each fault at its window's times (nemesis commands run off the event loop)."""
    loop = asyncio.get_running_loop()
    began = loop.time() - log.clock()
    nemeses = {n.name: n for n in nemeses_named(sorted({w.nemesis for w in schedule}))}
    for window in schedule:
        await asyncio.sleep(max(0.0, began + window.start - loop.time()))
        fault = await asyncio.to_thread(nemeses[window.nemesis].inject, cluster, queues, window.rng(seed))
        log.write("start", window=window.index, **fault.record())
        progress(f"{log.clock():6.1f}s {fault.nemesis} {fault.kind}: {fault.description}")
        try:
            await asyncio.sleep(max(0.0, began + window.end - loop.time()))
        finally:
            await asyncio.to_thread(fault.heal)
            log.write("stop", window=window.index)


def config_record(config: RunConfig) -> dict[str, object]:
    """The run's configuration as JSON-ready values."""
    record = asdict(config)
    record["out_dir"] = str(config.out_dir)
    record["lazy_fs"] = config.lazy_fs
    return record


def equivalent_command(config: RunConfig) -> str:
    """The `quorumq-jepsen run` command line of one run of `config` (for runs not started by the CLI)."""
    words = ["quorumq-jepsen", "run", "--time", f"{config.duration:g}", "--nemesis", ",".join(config.nemeses)]
    words += ["--seed", str(config.seed), "--nodes", str(config.nodes)]
    if config.queues is not None:
        words += ["--queues", str(config.queues)]
    if config.amqp:
        words.append("--amqp")
    return shlex.join(words)
