"""The `client` nemesis: kill a publisher or a consumer mid-request; healed by restarting it.

The workload's clients run in the runner's process, so a crash is the next-best thing to SIGKILLing a
client process (jepsen_tests.client_life): its request goes on the wire, its connections close before
the answer is read, and everything it held in memory (publisher id and sequence, consumer tag) is gone.
A crashed publisher's publish is `info`; a crashed consumer's unacked deliveries come back when the
server times the silent consumer out. It restarts as a new client when the window heals.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

from jepsen_tests.cluster import JepsenCluster

if TYPE_CHECKING:
    from jepsen_tests.nemesis import ActiveFault


class ClientNemesis:
    """Crashes a random publisher or consumer of the workload with a request in flight."""

    name = "client"
    variants = ("publisher", "consumer")

    def inject(self, cluster: JepsenCluster, queues: Sequence[str], rng: random.Random) -> ActiveFault:
        from jepsen_tests.nemesis import ActiveFault  # the registry there imports this module

        variant = rng.choice(self.variants)
        if cluster.clients is None:
            return ActiveFault(self.name, variant, [], "no workload clients to crash", lambda: None)
        crashed = cluster.clients.crash_client(variant, rng)
        return ActiveFault(self.name, variant, [], crashed.description, crashed.revive)
