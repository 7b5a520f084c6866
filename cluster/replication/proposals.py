"""Leader-side group commit: many operations coalesced into one Raft entry, one future per operation."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cluster.errors import NotLeader, OutcomeUnknown, TooLarge
from cluster.replication.entry_codec import entry_payload, pack_op
from cluster.replication.transport import MAX_FRAME_BYTES

FRAME_ENVELOPE_BYTES = 64 * 1024
"""What a frame carrying one entry holds beside its operation: the transport's framing, the Raft append
around the entry (a few hundred bytes, its group's and nodes' names included) and the entry's header."""
MAX_OPERATION_BYTES = MAX_FRAME_BYTES - FRAME_ENVELOPE_BYTES
"""The largest operation proposed (TooLarge beyond): an entry of it alone fits the frame every peer
takes. A larger one could never reach the followers, and its group would commit nothing after it."""
MAX_ENTRY_BYTES = 8 * 1024 * 1024
"""Operations merged into one entry add up to at most this (one larger operation travels alone): an
entry fits a frame (`MAX_OPERATION_BYTES`), and a large one holds up the frames behind it less."""


class ProposalFailed(Exception):
    """The operation was not committed here (no leader, lost leadership, entry overwritten).

    `leader` names the node believed to lead, when known; the caller may retry there. With
    `outcome_unknown` the operation's entry was already in the log when its caller was answered, so it may
    still commit: only an operation safe to repeat may be retried.
    """

    def __init__(self, reason: str, leader: str | None = None, *, outcome_unknown: bool = False) -> None:
        super().__init__(reason)
        self.leader = leader
        self.outcome_unknown = outcome_unknown


def not_committed(failure: ProposalFailed) -> NotLeader:
    """The node error answering a caller whose operation `failure` befell: OutcomeUnknown when it may
    still commit, else NotLeader (it did not happen; it may be retried on `failure.leader`)."""
    error = OutcomeUnknown if failure.outcome_unknown else NotLeader
    return error(str(failure), failure.leader)


@dataclass
class _InFlight:
    term: int
    futures: list[asyncio.Future]
    operations: int = 0  # how many operations it carries (none: a watched entry)
    size: int = 0  # their encoded bytes
    proposed_at: float = field(default_factory=time.perf_counter)


@dataclass
class ProposalBatcher:
    """Collects operations for one group and tracks the entries that carry them until applied, and how
    many operations (and encoded bytes of them) it holds so: pending, or in entries awaited."""

    pending_ops: list[bytes] = field(default_factory=list)  # each already msgpack-encoded
    pending_futures: list[asyncio.Future] = field(default_factory=list)
    in_flight: dict[int, _InFlight] = field(default_factory=dict)
    held_operations: int = field(default=0, init=False)
    held_bytes: int = field(default=0, init=False)
    # the operations `take` handed out last and their bytes, until proposed or refused
    _taken: tuple[int, int] = field(default=(0, 0), init=False, repr=False)

    def holds_at_least(self, operations: int, size: int) -> bool:
        """True when the operations not yet applied (pending, or in entries awaited) number `operations`
        or more, or add up to `size` encoded bytes or more: the bound beyond which a leader takes no
        more publishes for the group (`cluster.errors.Overloaded`)."""
        return self.held_operations >= operations or self.held_bytes >= size

    def submit(self, op: Any) -> asyncio.Future:
        """Queue an operation for the next entry; the future gets its result once applied.

        The operation is encoded here, so one that msgpack cannot encode fails its caller
        (TypeError, ValueError or OverflowError) instead of the entry it would have shared, and one
        larger than MAX_OPERATION_BYTES with TooLarge.
        """
        packed = pack_op(op)
        if len(packed) > MAX_OPERATION_BYTES:
            raise TooLarge(
                f"the request replicates as an operation of {len(packed)} bytes; at most"
                f" {MAX_OPERATION_BYTES} fit the frame that carries it to the other replicas"
            )
        future = asyncio.get_running_loop().create_future()
        self.pending_ops.append(packed)
        self.pending_futures.append(future)
        self.held_operations += 1
        self.held_bytes += len(packed)
        return future

    def has_pending(self) -> bool:
        """True when operations wait for an entry."""
        return bool(self.pending_ops)

    def take(self) -> tuple[bytes, list[asyncio.Future]]:
        """The oldest pending operations that fit MAX_ENTRY_BYTES (at least one) in one entry payload: the
        msgpack array of them. The rest stay pending for the next entry."""
        count, size = 1, len(self.pending_ops[0])
        while count < len(self.pending_ops) and size + len(self.pending_ops[count]) <= MAX_ENTRY_BYTES:
            size += len(self.pending_ops[count])
            count += 1
        data = entry_payload(self.pending_ops[:count])
        futures = self.pending_futures[:count]
        del self.pending_ops[:count], self.pending_futures[:count]
        self._taken = (count, size)
        return data, futures

    def proposed(self, index: int, term: int, futures: list[asyncio.Future]) -> None:
        """Remember that the entry at `index` of `term` carries these operations. An entry still awaited
        at that index (of an earlier term, which this node's log no longer holds) may yet commit
        elsewhere: its callers are answered that its outcome is unknown."""
        if index in self.in_flight:
            replaced = self._settle(index)
            _fail(replaced.futures, ProposalFailed("entry replaced in this node's log", outcome_unknown=True))
        self.in_flight[index] = _InFlight(term, futures, *self._taken)
        self._taken = (0, 0)

    def refuse(self, futures: list[asyncio.Future], error: ProposalFailed) -> None:
        """Fail operations `take` handed out that could not be proposed (those whose caller gave up
        already stay as they are)."""
        self._release(*self._taken)
        self._taken = (0, 0)
        _fail(futures, error)

    def watch(self, index: int, term: int) -> asyncio.Future:
        """A future resolved with None once the entry at `index` is applied with `term` (an entry that
        carries no operation, e.g. a membership change), failed like a proposal if another entry won."""
        future = asyncio.get_running_loop().create_future()
        self.proposed(index, term, [future])
        return future

    def awaits(self, index: int, term: int) -> bool:
        """True when a caller here waits for the replies of the entry at `index` of `term` (this node
        proposed it so, and it is not overwritten)."""
        flight = self.in_flight.get(index)
        return flight is not None and flight.term == term

    def applied(self, index: int, term: int, results: list[Any]) -> float | None:
        """Resolve the futures of the entry applied at `index` (None for those without a result), or fail
        them if another entry won. The seconds since it was proposed here, when it was and it won."""
        if index not in self.in_flight:
            return None
        flight = self._settle(index)
        if flight.term != term:
            _fail(flight.futures, ProposalFailed("entry was overwritten by a newer leader"))
            return None
        for i, future in enumerate(flight.futures):
            if not future.done():
                future.set_result(results[i] if i < len(results) else None)
        return time.perf_counter() - flight.proposed_at

    def forget_replaced(
        self, term_at: Callable[[int], int | None], held_term: int | None, leader: str | None
    ) -> None:
        """Fail, outcome unknown, every entry still awaited that this node's log no longer holds:
        `term_at(index)` (None once compacted under a snapshot, or beyond the log) is not the term it was
        proposed in. A snapshot installed over it tells no results, and an entry that a newer leader's
        entries replaced here may still commit through a node that holds it; either way this node will
        never apply it, and its callers would wait for ever. Entries of `held_term`, the term this node leads
        in (None when it does not lead), are held: a leader never loses its own entries.

        Entries are awaited in the order they were proposed, so of increasing terms: the check stops
        at the first entry of `held_term`, and costs a leader nothing while it leads."""
        gone = []
        for index, flight in self.in_flight.items():
            if flight.term == held_term:
                break
            if term_at(index) != flight.term:
                gone.append(index)
        if gone:
            unknown = ProposalFailed("entry no longer in this node's log", leader, outcome_unknown=True)
            for index in gone:
                _fail(self._settle(index).futures, unknown)

    def fail(self, error: ProposalFailed, *, in_flight: bool = False) -> None:
        """Fail pending operations (and, with `in_flight`, every entry still awaited, whose outcome is
        unknown: it may still commit)."""
        _fail(self.pending_futures, error)
        self._release(len(self.pending_ops), sum(map(len, self.pending_ops)))
        self.pending_ops, self.pending_futures = [], []
        if in_flight:
            unknown = ProposalFailed(str(error), error.leader, outcome_unknown=True)
            for index in list(self.in_flight):
                _fail(self._settle(index).futures, unknown)

    def _settle(self, index: int) -> _InFlight:
        """Stop awaiting the entry at `index`: what it carries is held no more."""
        flight = self.in_flight.pop(index)
        self._release(flight.operations, flight.size)
        return flight

    def _release(self, operations: int, size: int) -> None:
        self.held_operations -= operations
        self.held_bytes -= size


def _fail(futures: list[asyncio.Future], error: Exception) -> None:
    for future in futures:
        if not future.done():
            future.set_exception(error)
