"""The whole-node simulation (docs/decisions/0017): real nodes, clients and faults on one seed.

`NODE_SIM_SEEDS` (default 2000) and `NODE_SIM_SECONDS` (virtual seconds of faults per seed, default 10)
size the random run; a failure names its seed, and `python -m node_simulation --first-seed S --seeds 1
--seconds N` replays it. Seeds run in subprocesses with a fixed hash seed (the runner's own rule), as
many at once as the machine has cores.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cluster.queues.consumer_sessions import ConsumerSession, ConsumerSessions
from cluster.queues.queue_door import QueueDoor
from cluster.queues.queue_results import MessageRow, Published
from node_simulation.history import Violation
from node_simulation.simulation import NodeSimulation

ROOT = Path(__file__).resolve().parents[2]
SEEDS = int(os.environ.get("NODE_SIM_SEEDS", "2000"))
SECONDS = float(os.environ.get("NODE_SIM_SECONDS", "10"))
BATCHES = 10


@pytest.fixture(autouse=True)
def _only_errors_logged(caplog: pytest.LogCaptureFixture) -> None:
    """Nodes log every fault they meet; the runs in this process keep errors only, for this test alone."""
    caplog.set_level(logging.ERROR)


def _start(first: int, seeds: int, seconds: float, *options: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "node_simulation", "--first-seed", str(first), "--seeds", str(seeds)]
    return subprocess.Popen(
        [*command, "--seconds", str(seconds), *options],
        cwd=ROOT,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(runs: list[subprocess.Popen[str]]) -> list[subprocess.CompletedProcess[str]]:
    """Each run's outcome; every run still going is killed if this is interrupted (pytest's timeout)."""
    try:
        outputs = [(run, *run.communicate()) for run in runs]
        return [subprocess.CompletedProcess(run.args, run.returncode, out, err) for run, out, err in outputs]
    finally:
        for run in runs:
            run.kill()


def _run(first: int, seeds: int, seconds: float, *options: str) -> subprocess.CompletedProcess[str]:
    return _finish([_start(first, seeds, seconds, *options)])[0]


@pytest.mark.timeout(1800)  # a batch takes about a minute on 2 cores, longer on a loaded machine
@pytest.mark.parametrize("batch", range(BATCHES))
def test_whole_nodes_under_faults_keep_every_promise(batch: int) -> None:
    per_batch = SEEDS // BATCHES
    workers = max(1, min(os.cpu_count() or 1, per_batch))
    shares = [(batch * per_batch + i * per_batch // workers, per_batch // workers) for i in range(workers)]
    shares[-1] = (shares[-1][0], batch * per_batch + per_batch - shares[-1][0])  # the remainder too
    runs = _finish([_start(*share, SECONDS) for share in shares])
    failed = [run.stdout[-4000:] + run.stderr[-4000:] for run in runs if run.returncode != 0]
    assert not failed, "\n".join(failed)


def test_a_seed_replays_exactly() -> None:
    """A seed delivers the same frames at the same virtual times (the digest its line ends with) when
    run alone and when run after another seed in the same process."""
    after_another, alone = _run(3, 2, 5.0), _run(4, 1, 5.0)
    assert after_another.returncode == alone.returncode == 0, after_another.stdout + alone.stdout
    line = alone.stdout.splitlines()[0]
    assert line.startswith("seed 4: ok (") and line in after_another.stdout.splitlines()


def test_faults_of_every_kind_happen() -> None:
    """Seven runs are as hostile as they claim: crashes, power losses, partitions, broken links, restarts,
    rollbacks to older builds, a spare node joining and forgotten, oversized publishes, forwarded
    publishes, publishes fanned out through an exchange, membership changes, leadership transfers and
    metadata between them, with work still done. They run as the runner runs them (its fixed hash
    seed): in this process the counts depended on its own hash seed, and a leadership transfer (to a
    node drawn among all, member or not) happened in some and not in others."""
    run = _run(107, 7, 30.0, "--json")  # 79-85 drew no oversized publish once `strict` was grouped
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    summary = json.loads(run.stdout.splitlines()[-1])
    faults, clients = summary["faults"], summary["clients"]
    for kind in (
        "crashes",
        "power_losses",
        "partitions",
        "broken_links",
        "restarts",
        "rollbacks",
        "metadata_rollbacks",
        "joins",
        "forgets",
        "oversized",
    ):
        assert faults[kind], kind
    assert faults["confirmed"] > 500 and faults["delivered"] > 500
    for kind in (
        "forwarded",
        "members_added",
        "members_removed",
        "leaders_moved",
        "abandoned_consumers",
        "fanned_out",
    ):
        assert clients[kind], kind
    assert summary["most_filler_bytes"] > 2 << 20  # more metadata than one apply round


@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited")  # the run is cut off mid-way
def test_a_run_that_outlasts_its_real_time_fails_by_name() -> None:
    """The watchdog for runs that never end (seed 1524's ran for ever): past its limit of real time a run
    fails with its seed, instead of stalling the batch and CI with it."""
    with pytest.raises(Violation, match=r"seed 5: still running after its limit of real time"):
        NodeSimulation(5).run(10.0, real_limit_s=0.0)


def _first_violation(seeds: range, named: str, seconds: float = 30.0) -> str:
    """The first violation among `seeds` whose text holds `named` ("" when none does)."""
    for seed in seeds:
        try:
            NodeSimulation(seed).run(seconds)
        except Violation as exc:
            if named in str(exc):
                return str(exc)
    return ""


def _caught(mutation: Callable[[], None], named: str, seeds: range = range(1, 9)) -> bool:
    """Whether a seed among `seeds` fails with a violation naming `named` once `mutation` (a function of
    this module that breaks a rule) has been applied, run as the runner runs seeds: in a process of its
    own with its fixed hash seed (in this process, which seed tripped depended on pytest's random one)."""
    here = Path(__file__).parent
    code = (
        f"import sys; sys.path.insert(0, {str(here)!r}); import {Path(__file__).stem} as tests; "
        f"from node_simulation.simulation import quiet_logs; quiet_logs(); tests.{mutation.__name__}(); "
        f"print(tests._first_violation(range({seeds.start}, {seeds.stop}), {named!r}))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={
            **os.environ,
            "PYTHONHASHSEED": "0",
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")]),
        },
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    return named in run.stdout


def _poll_trusts_its_buffer() -> None:
    ConsumerSessions.holds = lambda self, tag: lambda delivery: True  # type: ignore[method-assign]


def test_the_checker_catches_a_poll_handing_out_what_its_consumer_no_longer_holds() -> None:
    """Finding 6 brought back (a poll trusts its buffer): a poll answers a message another consumer holds."""
    assert _caught(_poll_trusts_its_buffer, "which it does not hold")


def _confirm_without_the_message() -> None:
    publish = QueueDoor.publish
    calls, fake_ids = itertools.count(), itertools.count(1 << 40)

    async def sometimes_false(self: QueueDoor, messages: Any, *args: Any, **kwargs: Any) -> Published:
        if next(calls) % 40 == 39:
            return Published([next(fake_ids) for _ in messages], False)
        return await publish(self, messages, *args, **kwargs)

    QueueDoor.publish = sometimes_false  # type: ignore[method-assign]


def test_the_checker_catches_a_confirm_without_the_message() -> None:
    """A leader that answers one publish in forty with ids it never enqueued loses confirmed messages."""
    assert _caught(_confirm_without_the_message, "confirmed messages lost")


def _no_idle_rule() -> None:
    ConsumerSession.idle = lambda self, now_ms, idle_ms: False  # type: ignore[method-assign]


def test_the_checker_catches_consumers_that_hold_messages_after_they_went_away() -> None:
    """Finding 9 brought back (no idle rule): messages stay held by consumers nobody runs."""
    assert _caught(_no_idle_rule, "still held")


def _durable_log_shifted_on_retries() -> None:
    read = QueueDoor.read_durable_log
    calls = itertools.count()

    async def shifted(self: QueueDoor, name: str, start: int, end: int) -> list[MessageRow]:
        rows = await read(self, name, start, end)
        if next(calls) % 2 and len(rows) > 1:
            for row, later in itertools.pairwise(rows):
                row.id, row.body = later.id, later.body
        return rows

    QueueDoor.read_durable_log = shifted  # type: ignore[method-assign]


def test_the_checker_catches_a_durable_log_read_again_differently() -> None:
    """A leader that reads a durable consumer's range from one past its start gives Spark another batch
    for the same sequence numbers on a retry."""
    assert _caught(_durable_log_shifted_on_retries, "durable seq")


# Seeds that found a bug, each run again as it failed (a subprocess: the hash seed is the runner's); those
# found before a spare node joined and was forgotten run without that, and those found before graceful
# stops without those, as they did.
NO_CHURN = "--no-churn"
NO_STOPS = "--no-stops"


def _seed_keeps_every_promise(seed: int, seconds: float, *options: str) -> None:
    run = _run(seed, 1, seconds, *options)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]


def test_rule_a_replica_older_than_a_replacement_still_follows_the_new_incarnation_seed_3000483() -> None:
    """n2 installed a snapshot taken before n4 was replaced; its configuration named the old n4, so it
    dropped everything the new n4, its leader, sent, and never caught up."""
    _seed_keeps_every_promise(3000483, 20.0, NO_CHURN)


def test_rule_a_registered_node_left_out_of_the_metadata_group_is_added_back_seed_3100121() -> None:
    """The metadata leader removed the wiped n4 and lost leadership before adding it back as a learner;
    no later leader added it, and n4 never served again."""
    _seed_keeps_every_promise(3100121, 20.0, NO_CHURN)


def test_rule_a_queue_grows_only_onto_a_node_running_as_the_database_it_registered_seed_2608() -> None:
    """n2 grew queue "stream" onto the wiped n4, whose empty metadata hosted nothing, and waited 60 s for
    it to catch up; the same upkeep loop held back n4's replacement in the metadata group meanwhile."""
    _seed_keeps_every_promise(2608, 10.0, NO_CHURN)


def test_rule_a_queue_grows_only_onto_a_node_the_metadata_group_replaced_seed_57003522() -> None:
    """n1, wiped, registered its new database at once (a node without metadata relays its registration to
    the leader); n4, leading the metadata and queue "strict", grew "strict" onto it and waited 60 s for it
    to catch up, while the same upkeep loop held back n1's replacement in the metadata group, without
    which n1 received no metadata and hosted nothing."""
    _seed_keeps_every_promise(57003522, 10.0)


def test_rule_an_initial_member_that_never_hosted_its_queue_bootstraps_it_as_declared_seed_5100173() -> None:
    """n3's metadata applied the queue's declaration and its first membership change in one reconcile; the
    change had emptied the initial members, so n3 opened the group empty while the others counted it as
    a voter, and an empty replica votes for nobody: down to n3 and one other, no leader was elected."""
    _seed_keeps_every_promise(5100173, 10.0, NO_CHURN)


def test_rule_a_replica_that_knows_no_leader_of_its_term_follows_a_new_incarnation_seed_8001837() -> None:
    """A replica holding only its bootstrap membership, which named a member's old incarnation, learned
    the current term from another member; the member's new incarnation then won that term, and the
    replica dropped everything it sent (only a newer term admitted it), so it never caught up."""
    _seed_keeps_every_promise(8001837, 20.0, NO_CHURN)


def test_rule_a_join_waits_until_the_metadata_leader_registered_its_addresses_seed_114() -> None:
    """n5 joined before the seeds had registered: the answer listed no peer, so n5 knew none, could answer
    no frame of the metadata leader and stayed an empty learner for good."""
    _seed_keeps_every_promise(114, 10.0, NO_STOPS)


def test_rule_a_node_without_metadata_learns_where_its_leader_is_seed_1129() -> None:
    """n1, wiped, started again from its seeds while the metadata leader was n5, which joined later: n1
    knew no address for n5, could answer none of its frames and never received the metadata."""
    _seed_keeps_every_promise(1129, 10.0, NO_STOPS)


def test_rule_a_node_whose_metadata_lags_learns_where_a_newer_leader_is_seed_3077() -> None:
    """n3 was down while n5 joined and came to lead the metadata group; n3's metadata, which registered
    n3 itself, named no n5, so n3 refused n5's links and never caught up."""
    _seed_keeps_every_promise(3077, 10.0, NO_STOPS)


def test_rule_a_replica_keeps_following_the_leader_whose_snapshot_configured_it_seed_200441() -> None:
    """n5, added to a queue as an empty learner, installed the leader's index-0 snapshot, whose membership
    recorded the leader n3's old incarnation; it then dropped everything n3's new incarnation sent in
    the same term, and never caught up."""
    _seed_keeps_every_promise(200441, 20.0, NO_STOPS)


def test_rule_a_leader_that_joined_later_learns_where_an_unregistered_seed_is_seed_1900() -> None:
    """n3, a seed, had not registered when n5 joined and came to lead the metadata: no registry named n3,
    so n5 never reached it, and n3 could not register with a leader that did not know it."""
    _seed_keeps_every_promise(1900, 10.0, NO_STOPS)


def test_rule_an_initial_member_declared_before_it_registered_bootstraps_it_late_seed_201869() -> None:
    """Queue "stream" was declared on {n2, n4} before n4 registered, so it recorded no incarnation for
    n4; n4's metadata lagged past a membership change, after which only a recorded incarnation let an
    initial member bootstrap late: n4 opened the group empty, voted for nobody, and no leader was
    elected."""
    _seed_keeps_every_promise(201869, 20.0, NO_STOPS)


def test_rule_a_queue_is_placed_on_registered_nodes_while_there_are_enough_seed_1524() -> None:
    """Queue "stream" was placed on n5 before n5, which had joined, registered; n5 waited to be added, n2
    was wiped before the group elected anyone, and n3 alone never elected a leader: the clients' declare
    went unanswered for ever and the run never ended (it now fails once the clients are busy past
    their bound)."""
    _seed_keeps_every_promise(1524, 10.0, NO_STOPS)


def test_rule_a_joined_node_that_restarts_knowing_no_peer_asks_its_join_url_again_seed_4100379() -> None:
    """n5 joined, then every node went down before n5 had applied any metadata: started again, n5 knew the
    address of no peer (a joined node has no seeds, and its join answer was only in memory) and refused
    the hellos of all, so it never received the metadata that names them and did not serve."""
    _seed_keeps_every_promise(4100379, 10.0, NO_STOPS)


def test_rule_a_learner_is_promoted_only_while_it_is_up_seed_5103326() -> None:
    """n5, a learner of queue "strict" that had caught up, was stopped and forgotten; the queue's leader
    n1, then its only voter, promoted it all the same, and the group of two voters, one gone for good,
    never committed again."""
    _seed_keeps_every_promise(5103326, 10.0, NO_STOPS)


def test_rule_a_replica_missing_its_commit_index_does_not_follow_quietly_seed_2() -> None:
    """After a power loss a replica held more than it knew committed; following its quiet leader on an
    announcement, it stayed behind for as long as the queue was idle ("replicas apart")."""
    _seed_keeps_every_promise(2, 10.0)


def test_rule_a_quiet_leader_reminds_a_member_back_from_a_crash_seed_20001239() -> None:
    """n1, a learner being promoted, held the promotion but not its commit when it crashed; back, it
    could not stand for election, and the group's leader, quiet, never told it the commit."""
    _seed_keeps_every_promise(20001239, 10.0)


def test_rule_no_wipe_while_a_node_holds_a_replica_it_does_not_run_seed_62007279() -> None:
    """Queue "auto" was shrunk to voters (n3, n1); n1 and n3 then ran an older build whose metadata halted,
    so neither ran its replica of the group, and the fault model, reading only the replicas nodes ran,
    took n1's loss for survivable and wiped it: no majority of (n3, n1) was left, and 60 s after healing
    no node led the queue. A node's data directory is lost only while every replica it holds runs."""
    _seed_keeps_every_promise(62007279, 20.0)
