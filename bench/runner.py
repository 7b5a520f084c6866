"""A client that can run workload specs against one running broker cluster."""

from __future__ import annotations

from typing import Protocol

from bench.specs import Spec
from bench.workloads import WorkloadResult


class Runner(Protocol):
    """One client stack (library and language) bound to one cluster."""

    client: str
    """Short name of the client in the table (e.g. "Java client")."""
    description: str
    """One line on how it talks to the broker, for the results' list of clients."""

    def supports(self, spec: Spec) -> bool:
        """Whether this client runs `spec` at all (wrk only publishes, for instance)."""
        ...

    async def setup(self, spec: Spec) -> None:
        """Untimed preparation of `spec` (declare its queues, fill a queue to drain)."""
        ...

    async def run(self, spec: Spec) -> WorkloadResult:
        """Run `spec` once and return what it measured."""
        ...
