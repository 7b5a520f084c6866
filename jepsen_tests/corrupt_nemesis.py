"""The `corrupt` nemesis: damage one stopped node's database at rest, then start it again at the heal.

It SIGKILLs one node, picks one of its RocksDB data files (tables, write-ahead log, MANIFEST, blob
files), flips a few bits in a random block of it, cuts a random tail off it, or zeroes a random 4 KiB
block, synced, and restarts the node when the window heals. The node must find the damage, keep the
damaged copy aside and rejoin as a new incarnation (decision 0011) without losing anything confirmed.

Damage stays on a minority: while some node still reports an unrepaired damage, has not read its
database through yet, or cannot say, the victim is chosen among those nodes, so no group ever has a
majority of damaged replicas at once.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from jepsen_tests.cluster import JepsenCluster
from jepsen_tests.fault import ActiveFault
from jepsen_tests.file_damage import KINDS, damage_file, damageable_files
from quorumq import QuorumqError, SyncClient

DATABASE_DIR = "rocksdb"


def may_be_repairing(cluster: JepsenCluster, name: str) -> bool:
    """True when the node reports damage it is still repairing from, has not read its whole database
    through yet (damage may still be found, decision 0016), or cannot be asked."""
    node = cluster.node(name)
    if not node.running:
        return True
    try:
        with SyncClient([node.url], timeout=3.0, connect_timeout=1.0) as client:
            health = client.health()
    except QuorumqError:
        return True
    damage = health.get("damage")
    return bool(damage and damage.get("repairing")) or not health.get("store_check", {}).get("done")


def pick_victim(cluster: JepsenCluster, rng: random.Random) -> str:
    """One node, such that the nodes with unrepaired damage stay a minority."""
    names = cluster.names
    minority = (len(names) - 1) // 2
    unsure = [n for n in names if may_be_repairing(cluster, n)]
    return rng.choice(unsure if len(unsure) >= minority else names)


class CorruptNemesis:
    """Damages one file of one stopped node's database (bitflip, truncate or zero); heals by restarting."""

    name = "corrupt"
    variants = KINDS

    def inject(self, cluster: JepsenCluster, queues: Sequence[str], rng: random.Random) -> ActiveFault:

        kind = rng.choice(self.variants)
        victim = pick_victim(cluster, rng)
        cluster.kill(victim)
        files = damageable_files(cluster.node(victim).data_dir / DATABASE_DIR)
        if files:
            description = damage_file(rng.choice(files), kind, rng).describe()
        else:
            description = "no database file to damage"
        return ActiveFault(
            self.name, kind, [victim], f"{description} on {victim}", lambda: cluster.restart(victim)
        )
