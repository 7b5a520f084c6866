"""The clock nemesis bites, and leader-stamped time survives it (decision 0010).

On a real 3-node cluster in network namespaces, every node under libfaketime: a skewed node's wall
clock really reads shifted (its HTTP `Date` header) while its monotonic clock does not; and a queue
leader whose wall clock jumps expires nothing early, freezes nothing, loses and reorders nothing.
"""

from __future__ import annotations

import email.utils
import json
import random
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import pytest
from netns_cluster import running_cluster

from cli.node_processes import wait_until
from jepsen_tests.clock_nemesis import ClockNemesis
from jepsen_tests.cluster import JepsenCluster
from jepsen_tests.fake_clocks import INSTALL_HINT, libfaketime
from quorumq import SyncClient

pytestmark = pytest.mark.faults

HOUR_S = 3600
CLOCK_PROBE = "import json, time; print(json.dumps([time.time(), time.monotonic()]))"


@pytest.fixture(scope="module")
def clock_cluster(netns_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JepsenCluster]:
    """Three nodes in namespaces, each under a fake wall clock the test moves."""
    if libfaketime() is None:
        print(f"clock tests skipped: libfaketime is not installed ({INSTALL_HINT})")
        pytest.skip(f"libfaketime is not installed ({INSTALL_HINT})")
    with running_cluster(tmp_path_factory.mktemp("clock-cluster"), fake_clocks=True) as cluster:
        yield cluster


@pytest.fixture
def clocks_healed(clock_cluster: JepsenCluster) -> Iterator[JepsenCluster]:
    """The cluster, with every clock set right again (and read right by its node) after the test."""
    yield clock_cluster
    for name in clock_cluster.names:
        shift(clock_cluster, name, 0)


def wall_offset_s(url: str) -> float:
    """How far the node's wall clock (its `Date` header) is from ours, in seconds."""
    with urllib.request.urlopen(f"{url}/api/health", timeout=5) as response:
        stamped = email.utils.parsedate_to_datetime(response.headers["Date"]).timestamp()
    return stamped - time.time()


def shift(cluster: JepsenCluster, name: str, seconds: int) -> None:
    """Set a node's clock `seconds` off and wait until the node's `Date` header shows it."""
    assert cluster.clocks is not None
    cluster.clocks.shift(name, seconds)
    wait_until(
        lambda: abs(wall_offset_s(cluster.node(name).url) - seconds) < 3,
        10,
        f"{name}'s clock to read {seconds:+d}s",
        cluster.nodes,
    )


def declare(cluster: JepsenCluster, queue: str, ttl_ms: int) -> None:
    with SyncClient(cluster.urls, timeout=30.0) as client:
        client.declare(queue, {"x-quorum-initial-group-size": 3, "x-message-ttl": ttl_ms})


def publish(cluster: JepsenCluster, queue: str, values: range) -> None:
    """Publish each value, one confirmed publish at a time (each stamped by the queue's leader)."""
    with SyncClient(cluster.urls, timeout=15.0) as client:
        for value in values:
            client.publish(queue, [str(value).encode()])


def drain(cluster: JepsenCluster, queue: str) -> list[int]:
    """Take every message left in the queue, in order."""
    taken: list[int] = []
    with SyncClient(cluster.urls, timeout=15.0) as client:
        while batch := client.get(queue, count=100, ack="auto"):
            taken += [int(d.body) for d in batch]
    return taken


def filled_queue(cluster: JepsenCluster, queue: str, ttl_ms: int, values: range) -> str:
    """Declare `queue` with a TTL, publish `values` into it, and return its leader."""
    declare(cluster, queue, ttl_ms)
    publish(cluster, queue, values)
    leader = cluster.queue_leader(queue)
    assert leader is not None
    return leader


def publish_and_keep_all(cluster: JepsenCluster, queue: str, values: range) -> None:
    """Publish `values` after 0..start-1; every value must still be in the queue, then come out in order."""
    publish(cluster, queue, values)
    stats = queue_stats(cluster, queue)
    assert stats["messages"] == values.stop and not stats["dropped"], stats
    assert drain(cluster, queue) == list(range(values.stop))


def queue_stats(cluster: JepsenCluster, queue: str) -> dict:
    with SyncClient(cluster.urls, timeout=15.0) as client:
        return client.queue(queue)


def test_the_nemesis_moves_the_wall_clock_and_not_the_monotonic_one(clocks_healed: JepsenCluster) -> None:
    cluster = clocks_healed
    clocks = cluster.clocks
    assert clocks is not None
    declare(cluster, "clock-probe", ttl_ms=60_000)
    fault = ClockNemesis().inject(cluster, ["clock-probe"], random.Random(7))
    victim = fault.nodes[0]
    try:
        offset = clocks.offset(victim)
        assert abs(offset) >= 5 and fault.kind in ClockNemesis.variants
        if fault.kind != "jump":
            shift(cluster, victim, offset)  # the nemesis's offset shows in the running node
        for other in cluster.names:
            if other != victim:
                assert abs(wall_offset_s(cluster.node(other).url)) < 3
        shift(cluster, victim, HOUR_S)
        # The node's own environment in a fresh process: the wall clock moved, the monotonic one did not.
        probe = subprocess.run(
            [sys.executable, "-c", CLOCK_PROBE], env=clocks.env(victim), capture_output=True, check=True
        )
        wall, monotonic = json.loads(probe.stdout)
        assert abs(wall - time.time() - HOUR_S) < 3
        assert abs(monotonic - time.monotonic()) < 3
    finally:
        fault.heal()
    assert clocks.offset(victim) == 0
    shift(cluster, victim, 0)
    assert cluster.node(victim).healthy()


def test_nodes_forward_to_and_from_a_node_whose_clock_jumped(clocks_healed: JepsenCluster) -> None:
    """Node assertions are timed by the steady clock (`cluster/steady_clock.py`): with the wall clock,
    every request forwarded to or from the skewed node was refused as `invalid node assertion`."""
    cluster, queue = clocks_healed, "forwarded"
    declare(cluster, queue, ttl_ms=60_000)
    leader = cluster.queue_leader(queue)
    for skewed, seconds in ((leader, HOUR_S), (leader, -HOUR_S), (cluster.names[-1], HOUR_S)):
        assert skewed is not None
        shift(cluster, skewed, seconds)
        for node in cluster.nodes:  # each asks the leader: a forward unless it leads
            with SyncClient([node.url], timeout=10.0) as client:
                assert client.queue(queue)["leader"] == leader
                client.publish(queue, [b"x"])
        shift(cluster, skewed, 0)


def test_ttl_messages_survive_their_leaders_clock_jumping_an_hour_forward(
    clocks_healed: JepsenCluster,
) -> None:
    cluster, queue = clocks_healed, "ttl-forward"
    leader = filled_queue(cluster, queue, 60_000, range(50))
    shift(cluster, leader, HOUR_S)
    publish_and_keep_all(cluster, queue, range(50, 60))  # stamped by a leader an hour ahead


def test_seed118_n3_clock_back_then_forward_hours_on_a_leader_expires_no_backlog(
    clocks_healed: JepsenCluster,
) -> None:
    """Schedule seed 118 (`--nemesis clock,kill,partition --nodes 3`): node1, a leader, 19 h behind,
    healed, then 12 h ahead. With the wall clock as the stamp it lost 32 values, the dead-letter
    queues' ready backlog (TTL 640 s) expiring at the first command of the forward jump."""
    cluster, queue = clocks_healed, "seed118"
    leader = filled_queue(cluster, queue, 640_000, range(20))
    shift(cluster, leader, -70_091)
    publish(cluster, queue, range(20, 30))
    shift(cluster, leader, 0)
    shift(cluster, leader, 44_900)
    publish_and_keep_all(cluster, queue, range(30, 40))


def test_a_new_leader_an_hour_ahead_expires_nothing(clocks_healed: JepsenCluster) -> None:
    cluster, queue = clocks_healed, "ttl-new-leader"
    leader = filled_queue(cluster, queue, 60_000, range(30))
    ahead = next(n for n in cluster.names if n != leader)
    shift(cluster, ahead, HOUR_S)
    with SyncClient(cluster.urls, timeout=30.0) as client:
        client.transfer_leader(queue, ahead)
    wait_until(lambda: cluster.queue_leader(queue) == ahead, 30, f"{ahead} to lead {queue}", cluster.nodes)
    publish_and_keep_all(cluster, queue, range(30, 40))


def test_a_leader_clock_jumping_back_an_hour_does_not_freeze_expiry(clocks_healed: JepsenCluster) -> None:
    cluster, queue = clocks_healed, "ttl-backward"
    leader = filled_queue(cluster, queue, 2_000, range(1))
    shift(cluster, leader, -HOUR_S)
    publish(cluster, queue, range(1, 6))

    def expired() -> bool:
        stats = queue_stats(cluster, queue)
        return stats["messages"] == 0 and stats["dropped"].get("expired") == 6

    # Queue time runs at least at half speed: a 2 s TTL expires within about 4 s, not in an hour.
    wait_until(expired, 20, "the 2 s TTL to expire under a clock an hour behind", cluster.nodes)
