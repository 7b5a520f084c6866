"""`QueueDoor`: the one door into a queue this node hosts, on every replica, leading or following.

The HTTP handlers, the dead-letter worker and `Node` reach a queue only through its typed methods. Each
builds its `queue_state` command in one place (`_command`), replicates it in an envelope stamped once
with the leader's clock (`_envelope`, in the version every node of the cluster reads), and turns the
state machine's reply into a `cluster.queues.queue_results` value or raises a `cluster.errors` refusal named
for what it means. The door also owns what a leader does beyond applying: serving consumers (their
sessions' life in `consumer_sessions`; served once this leader applied an entry of its own term), the
timers (`Tick`, consumer ends, the retried delete of a sealed queue), acting on effects, and the rule of
which arguments change at runtime.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from cluster.errors import (
    BadRequest,
    LogGap,
    NotLeader,
    QueueConflict,
    QueueFull,
    Refused,
    UnknownConsumer,
)
from cluster.queues.consumer_names import owned
from cluster.queues.consumer_sessions import ConsumerSession, ConsumerSessions
from cluster.queues.dead_lettering.messages import DEATHS, with_death
from cluster.queues.leader_clock import LeaderClock
from cluster.queues.queue_replica import AutoAcked, QueueReplica
from cluster.queues.queue_results import (
    ConsumerSummary,
    MessageRow,
    Outcome,
    Position,
    Published,
    QueueCounts,
    RedriveProgress,
    Settled,
)
from cluster.replication.entry_codec import (
    AUTO_ACK_OP_VERSION,
    COUNTING_OP_VERSION,
    DELAY_OP_VERSION,
    HOLDING_OP_VERSION,
    POLICY_OP_VERSION,
    READER_OP_VERSION,
    REDRIVE_OP_VERSION,
    encode_queue_op,
)
from cluster.replication.proposals import ProposalFailed, not_committed
from cluster.replication.stored_message import StoredMessage
from queue_state.arguments import (
    RUNTIME_ARGUMENTS,
    ArgumentError,
    DeadLetterRoute,
    QueueConfig,
    parse_arguments,
)
from queue_state.command_codec import arguments_version
from queue_state.commands import (
    MAX_REASON_CHARS,
    ApplyPolicy,
    Cancel,
    Checkout,
    Command,
    ConsumerDown,
    Discard,
    DlxCheckout,
    DlxSettle,
    DurableCheckout,
    DurableSettle,
    EndRedrive,
    Enqueue,
    EntryMeta,
    Get,
    InvalidCommand,
    NewMessage,
    Purge,
    RedriveCheckout,
    RedriveSettle,
    Return,
    Seal,
    Settle,
    StartRedrive,
    Tick,
    Touch,
    UpdateConfig,
)
from queue_state.durable import DurableLogGap
from queue_state.effects import (
    Acked,
    DeadLetter,
    Deliver,
    Deliveries,
    Delivery,
    Duplicate,
    DurablePosition,
    Enqueued,
    Failure,
    Purged,
    QueueExpired,
    Rejected,
)
from queue_state.machine import QUEUE_DELETING, UNKNOWN_CONSUMER
from queue_state.messages import TakeLimit
from queue_state.policy import AppliedPolicy
from queue_state.redrive import CANCELLED, CONSUMER_PREFIX, UNKNOWN_TASK, RedriveTask

log = logging.getLogger(__name__)

DELETE_RETRY_MS = 1000
CATCH_UP_WAIT_S = 5.0
"""How long a request about a consumer waits for a new leader to catch up (`_until_serving`) before it
is answered 503."""
FIT_SCAN = 65536
"""The most ready messages a get with a byte budget looks at to tell how many it takes (`_fitting`)."""
_DURABLE_REFUSALS = frozenset({"name_in_use", "beyond_sequence", QUEUE_DELETING})

C = TypeVar("C", bound=Command)


@contextlib.contextmanager
def _invalid_is_bad_request() -> Iterator[None]:
    """A command field the state machine does not take (e.g. an empty publisher) is the caller's error."""
    try:
        yield
    except InvalidCommand as exc:
        raise BadRequest(str(exc)) from exc


def _refusal(reply: Any) -> Exception:
    """A refusal from the state machine (`Refused` with its code), or an error for a reply it never gives."""
    if isinstance(reply, Failure):
        return Refused(reply.code, reply.reason)
    return RuntimeError(f"unexpected reply {reply!r}")


def _raise_if_unknown_task(reply: Any) -> None:
    """A redrive command's refusal for a task that does not run (as that start): UnknownConsumer."""
    if isinstance(reply, Failure) and reply.code == UNKNOWN_TASK:
        raise UnknownConsumer(reply.reason, code=reply.code)


class Replicator(Protocol):
    """What a queue's door needs of the Raft host: replicate an operation into a group's log."""

    def submit(self, gid: str, op: Any) -> asyncio.Future[Any]:
        """A future resolved with the operation's reply once its entry is committed and applied here."""
        ...

    def is_quiet(self, gid: str) -> bool:
        """Whether group `gid` is quiet here (`RaftNode.quiesce`)."""
        ...


class QueueFormats(Protocol):
    """Which queue operations version the cluster reads (`FormatVersions`)."""

    def writes_queue_ops(self) -> int:
        """The version every node of the cluster reads: the one to write."""
        ...

    def require_queue_ops(self, version: int, what: str) -> None:
        """Refused `upgrade_in_progress` (or FormatsNotYetKnown) unless every node reads `version`."""
        ...

    def require_publish(
        self, delays: bool, priorities: bool, message_ids: bool = False, groups: bool = False
    ) -> None:
        """As `require_queue_ops`, for a publish with delays, priorities, message ids for a deduplication
        window, groups for a queue with message groups, or several."""
        ...

    def reads_queue_ops(self, version: int) -> bool:
        """Whether every node reads `version`; FormatsNotYetKnown while that is not known yet."""
        ...


class DoorHost(Protocol):
    """What a queue's door asks of the node hosting it (`Node`): tokens, and what is done beyond the
    queue when its state machine or its leadership says so."""

    def new_token(self) -> str:
        """An unguessable token (consumer tags, get holders)."""
        ...

    def dead_lettered(
        self, queue: str, letter: DeadLetter, held: list[tuple[Delivery, StoredMessage]], now_ms: int
    ) -> None:
        """Hand on what `queue` dead-lettered at most once, with the bodies still stored (`held`)."""
        ...

    def request_delete(self, name: str, group: str) -> None:
        """Ask the metadata, without waiting, to delete the queue (expired, or sealed)."""
        ...

    async def delete_sealed(self, name: str, group: str) -> None:
        """Delete the sealed queue through the metadata, waiting until this node sees it gone."""
        ...

    def leadership_changed(self, door: QueueDoor, is_leader: bool) -> None:
        """This node started or stopped leading the queue: the workers beside its leader follow."""
        ...

    def redrive_started(self, door: QueueDoor) -> None:
        """The queue started a redrive task: run its worker."""
        ...

    def queue_changed(self, door: QueueDoor) -> None:
        """The queue applied an entry or opened a session: while this node leads it, its timer runs
        again (something may come due since `on_timer` said nothing could), and the node's sync pass
        visits it."""
        ...

    def check_publish(self, queue: str, group: str) -> None:
        """Refuse a publish to `queue` (of `group`) while a member of the group is in a resource alarm
        (`ResourceAlarmed`), or while its leader holds as many proposals not yet applied as it takes
        (`Overloaded`)."""
        ...


class QueueDoor:
    """One queue hosted on this node, its door whether this node leads the queue's group or follows it:
    reads answer what this replica applied, and what goes through the log needs this node to lead."""

    def __init__(
        self,
        name: str,
        group: str,
        replica: QueueReplica,
        host: Replicator,
        clock: LeaderClock,
        *,
        node: DoorHost,
        formats: QueueFormats,
        consumer_timeout_ms: int,
        consumer_idle_timeout_ms: int,
    ) -> None:
        self.name = name
        self.group = group
        self._replica = replica
        self._host = host
        self._clock = clock
        self._sessions = ConsumerSessions(
            name,
            replica,
            self._now,
            consumer_timeout_ms,
            consumer_idle_timeout_ms,
            opened=functools.partial(node.queue_changed, self),
        )
        self._node = node
        self._formats = formats
        self._applied = asyncio.Event()
        self._serving = asyncio.Event()  # this leader applied an entry of its own term (`_catch_up`)
        self._leadership = 0  # counts this node's leaderships of the queue
        self._catching_up: int | None = None  # the leadership whose catch-up Tick is on its way
        self._tick_in_flight = False
        self._delete_due_ms: int | None = None
        self._deadline_ms: int | None = None  # the machine's next deadline, as of the last entry applied
        self._deadline_stale = True  # an entry was applied (or leadership changed) since it was read
        self._policy_in_flight: int | None = None  # the revision of the policies proposed
        self._policy_unreadable = 0  # the last revision whose policy this node cannot read
        self._publishes_waiting = 0
        replica.listener = self

    @property
    def is_leader(self) -> bool:
        """True while this node leads the queue's group."""
        return self._replica.is_leader

    @property
    def quiet(self) -> bool:
        """True while the queue's group is quiet here: idle, with every member holding all it commits."""
        return self._host.is_quiet(self.group)

    @property
    def publishes_waiting(self) -> int:
        """How many publishes wait here for room in the full queue (`publish`'s `wait_ms`)."""
        return self._publishes_waiting

    @property
    def serving(self) -> bool:
        """True while this node leads and has applied an entry of its own term: its state holds all that
        earlier leaders committed."""
        return self._replica.is_leader and self._serving.is_set()

    # -- what the queue is ------------------------------------------------------------------------

    @property
    def declared_config(self) -> QueueConfig:
        """The queue's declared configuration as this replica applied it (runtime changes included, its
        policy's not): a new object whenever it changes."""
        return self._replica.machine.declared_config

    def definition(self) -> dict[str, Any]:
        """The queue's declared arguments as this replica applied them (canonical, runtime changes
        included, its policy's not)."""
        return self.declared_config.to_arguments()

    def effective_definition(self) -> dict[str, Any]:
        """The arguments in force: the declared ones overlaid by the queue's policy."""
        return self._replica.machine.config.to_arguments()

    @property
    def policy(self) -> str:
        """The name of the policy the queue applies ("" for none)."""
        return self._replica.machine.policy.name

    def apply_policy(self, revision: int, choose: Callable[[], AppliedPolicy | None]) -> bool:
        """On the leader, put the policy `choose()` picks at the metadata's policies `revision` into the
        queue's log, unless the queue applies that revision (or a later one) already or is about to; not
        before every node reads queue operations with policies and the policy's arguments (the next call
        retries). A choice of None (a policy this node cannot read) keeps the queue's policy, and is not
        asked again for that revision. Each revision is proposed once at a time. True when proposed."""
        if (
            not self.is_leader
            or self._replica.machine.policy.revision >= revision
            or max(self._policy_in_flight or 0, self._policy_unreadable) >= revision
            or self._formats.writes_queue_ops() < POLICY_OP_VERSION
        ):
            return False
        policy = choose()
        if policy is None:
            self._policy_unreadable = revision
            return False
        arguments = dict(policy.arguments)
        if arguments_version(arguments) > self._formats.writes_queue_ops():
            return False
        self._policy_in_flight = revision
        command = ApplyPolicy(policy.name, arguments, revision)
        proposal = asyncio.ensure_future(self._submit(command))
        proposal.add_done_callback(functools.partial(self._policy_proposed, revision))
        return True

    def _policy_proposed(self, revision: int, proposal: asyncio.Future[Any]) -> None:
        if self._policy_in_flight == revision:  # not a later revision proposed meanwhile
            self._policy_in_flight = None
        if not proposal.cancelled() and proposal.exception() is not None:
            log.info("queue %s: policy not applied yet: %s", self.name, proposal.exception())

    def stats(self) -> QueueCounts:
        """The queue's counters as this replica has applied them."""
        stats = self._replica.machine.stats()
        return QueueCounts(
            messages=stats.messages,
            messages_ready=stats.messages_ready,
            messages_unacknowledged=stats.messages_unacknowledged,
            messages_dlx=stats.dlx_pending,
            message_bytes=stats.message_bytes,
            consumers=stats.consumers,
            dead_lettered=dict(stats.dead_lettered),
            dropped=dict(stats.dropped),
            dead_letter_bytes=stats.message_bytes_dlx,
            next_id=self._replica.machine.next_id,
            messages_delayed=stats.messages_delayed,
            messages_ready_by_priority=dict(stats.messages_ready_by_priority),
            dedupe_ids=stats.dedupe_ids,
            dedupe_evicted=stats.dedupe_evicted,
            dedupe_refused=stats.dedupe_refused,
            groups=stats.groups,
            groups_blocked=stats.groups_blocked,
        )

    async def update_arguments(self, changes: dict[str, Any]) -> dict[str, Any]:
        """Change `RUNTIME_ARGUMENTS` (a None value removes one) and return the queue's arguments after.

        BadRequest for another argument, or when the merged arguments do not parse. Leaving at-least-once
        dead-lettering drops the pending dead letters, as RabbitMQ does (counted in `dropped`)."""
        fixed = sorted(set(changes) - RUNTIME_ARGUMENTS)
        if fixed:
            raise BadRequest(f"arguments {fixed} cannot be changed at runtime; declare a new queue")
        merged = {k: v for k, v in {**self.definition(), **changes}.items() if v is not None}
        try:
            config = parse_arguments(merged)
        except ArgumentError as exc:
            raise BadRequest(f"argument {exc.argument}: {exc.reason}") from exc
        self._formats.require_queue_ops(arguments_version(merged), "none of these arguments")
        await self._submit(self._command(UpdateConfig, config))
        return self.definition()

    async def purge(self) -> int:
        """Remove every ready message; returns how many."""
        reply = await self._submit(self._command(Purge))
        return reply.count if isinstance(reply, Purged) else 0

    async def delete_if(self, if_empty: bool, if_unused: bool) -> None:
        """Delete the queue only if empty and/or unused, as decided in its log: a `Seal` that holds refuses
        every later publish and new consumer, then the metadata deletes the queue.

        QueueConflict when a condition fails. Once sealed, the queue is deleted even if this call fails:
        its leader's timer asks the metadata again (`on_timer`)."""
        reply = await self._submit(self._command(Seal, if_empty, if_unused))
        if isinstance(reply, Failure):
            raise QueueConflict(reply.reason)
        await self._node.delete_sealed(self.name, self.group)

    # -- publishing and reading ---------------------------------------------------------------------

    async def publish(
        self,
        messages: Sequence[tuple[StoredMessage, int | None]],
        publisher: str | None,
        seq: int | None,
        delays: Sequence[int | None] | None = None,
        *,
        priorities: Sequence[int] | None = None,
        wait_ms: int = 0,
    ) -> Published:
        """Enqueue a batch (each message with its optional expiration in ms, with `delays` the ms each
        waits before it is ready, with `priorities` each one's priority) once a majority has it.

        With `publisher` and `seq` a retry is answered with the first answer's ids (the same pair goes
        with every attempt). QueueFull when the queue is full and rejects publishes, and stays so for
        `wait_ms` (`_until_room`); Refused `seq_too_old` when the seq is too old for the publisher's
        window to tell whether it was enqueued, `queue_deleting` once sealed,
        `upgrade_in_progress` for delays or priorities while a node of the cluster reads none;
        ResourceAlarmed while a member of the queue's group is in a resource alarm (decision 0024), and
        Overloaded while this leader holds as many of the group's proposals not yet applied as it takes,
        unless the publish is one the queue answers without enqueueing (a retry whose answer was lost)."""
        message_ids, groups = self._message_ids(messages), self._groups(messages)
        with _invalid_is_bad_request():
            if delays is None and priorities is None and message_ids is None and groups is None:
                sizes = tuple(NewMessage(len(m.body), expiration) for m, expiration in messages)
            else:
                self._formats.require_publish(
                    delays is not None, priorities is not None, message_ids is not None, groups is not None
                )
                count = len(messages)
                sizes = tuple(
                    NewMessage(len(m.body), expiration, delay, priority, message_id, group)
                    for (m, expiration), delay, priority, message_id, group in zip(
                        messages,
                        delays or [None] * count,
                        priorities or [0] * count,
                        message_ids or [None] * count,
                        groups or [None] * count,
                        strict=True,
                    )
                )
        bodies = [m for m, _ in messages]
        if not wait_ms:
            return await self._enqueue(sizes, publisher, seq, bodies)
        deadline = asyncio.get_running_loop().time() + wait_ms / 1000
        while True:
            limited = self._limited()
            try:
                return await self._enqueue(sizes, publisher, seq, bodies)
            except QueueFull:
                if not await self._until_room(limited, deadline):
                    raise

    def _message_ids(self, messages: Sequence[tuple[StoredMessage, int | None]]) -> list[str | None] | None:
        """Each message's id, for a queue with a deduplication window (as this replica applied its
        configuration) when a message has one; None otherwise. A dead letter (it carries `x-death`: dead-
        lettered or redriven here) has none: it is the same message coming back, never a duplicate."""
        if self._replica.machine.config.dedupe_window is None:
            return None
        message_ids = [None if DEATHS in m.headers else m.message_id for m, _ in messages]
        return message_ids if any(message_ids) else None

    def _groups(self, messages: Sequence[tuple[StoredMessage, int | None]]) -> list[str | None] | None:
        """Each message's group, for a queue with message groups when a message has one; None otherwise
        (a group on another queue stays in the message's headers only)."""
        if not self._replica.machine.config.message_groups:
            return None
        groups = [m.group for m, _ in messages]
        return groups if any(groups) else None

    async def _enqueue(
        self,
        sizes: tuple[NewMessage, ...],
        publisher: str | None,
        seq: int | None,
        bodies: list[StoredMessage],
    ) -> Published:
        """One attempt at a publish (`publish`)."""
        if publisher is None or seq is None or not self._replica.machine.publish_answered(publisher, seq):
            self._node.check_publish(self.name, self.group)
        reply = await self._submit(self._command(Enqueue, sizes, publisher, seq), bodies)
        if isinstance(reply, Rejected):
            raise QueueFull(f"queue '{self.name}' is full: {reply.reason}")
        if isinstance(reply, Enqueued):
            refused = [position for position, _ in reply.duplicates]
            return Published(list(reply.answered_ids()), len(refused) == len(reply.ids), refused)
        if isinstance(reply, Duplicate):
            return Published(list(reply.ids or ()), True, [position for position, _ in reply.duplicates])
        raise _refusal(reply)

    def _limited(self) -> tuple[int, int, QueueConfig]:
        """What room in a full queue depends on, as this replica applied it: the messages its length
        limits count (all but those consumers hold) and their bytes, and its configuration (the limits)."""
        stats = self._replica.machine.stats()
        counted = stats.messages - stats.messages_unacknowledged
        return counted, stats.message_bytes - stats.message_bytes_unacknowledged, self._replica.machine.config

    async def _until_room(self, refused_in: tuple[int, int, QueueConfig], deadline: float) -> bool:
        """After a publish was refused for want of room in the state `refused_in` (`_limited`), wait until
        the applied state is another (an ack, a get, a purge, an expiry or a new limit may have made room),
        or this node stops leading (then the next attempt says so): True; False once the loop's time
        reaches `deadline`. Each entry applied wakes the wait; a refused publish changes nothing it
        compares, so waiting publishers do not wake each other."""
        loop = asyncio.get_running_loop()
        self._publishes_waiting += 1
        try:
            while (remaining := deadline - loop.time()) > 0:
                if not self.is_leader or self._limited() != refused_in:
                    return True
                await self.wait_applied(remaining)
            return False
        finally:
            self._publishes_waiting -= 1

    async def get(
        self, count: int, auto_ack: bool, since_ms: int | None, max_bytes: int | None = None
    ) -> list[MessageRow]:
        """Take up to `count` ready messages (only those enqueued at or after `since_ms`, when given),
        settled at once or held for a manual ack (`settle` with no consumer). With `max_bytes`, only as
        many as fit it in the applied state now (`_fitting`): all those taken are answered, so a get
        never removes a message it does not answer."""
        holder = f"get-{self._node.new_token()}"
        if max_bytes is not None:
            count = self._fitting(count, since_ms, max_bytes)
        command = self._command(Get, holder, count, auto_ack, since_ms)
        session = None if auto_ack else self._sessions.open_get(holder)
        try:
            reply = await self._submit(command)
        finally:
            if session is not None:
                session.getting = False
        if isinstance(reply, AutoAcked):
            return [MessageRow.of(delivery, stored) for delivery, stored in reply.messages]
        deliveries = reply.deliveries if isinstance(reply, Deliveries) else ()
        if not deliveries:
            self._sessions.close(holder)
        return self._rows(deliveries)

    async def settle(
        self,
        ids: tuple[int, ...],
        consumer: str | None,
        outcome: Outcome,
        failed: bool = True,
        reason: str | None = None,
        delay_ms: int | None = None,
    ) -> Settled:
        """Settle checked-out messages held by `consumer` (None: by whoever holds each, as after a get).

        A requeue counts a failed delivery unless `failed` is false (a plain return) and with `delay_ms`
        waits that long before it is ready again (0: not at all, whatever the queue's delayed retry); a
        discard keeps `reason` with the dead letters. They need queue operations version 3 (5 for a
        delay) across the cluster: until then Refused `upgrade_in_progress` (FormatsNotYetKnown while
        that is not known yet). NotLeader when a consumer is named and this leader has not caught up
        within CATCH_UP_WAIT_S; UnknownConsumer when the queue has no such consumer; ids no longer held
        change nothing and are named in the answer's warning."""
        command: Settle | Return | Discard
        if outcome is Outcome.ACK:
            command = self._command(Settle, ids, consumer)
        elif outcome is Outcome.REQUEUE:
            command = self._command(Return, ids, consumer, failed, delay_ms)
        else:
            command = self._command(Discard, ids, consumer, reason)
        plain_return = isinstance(command, Return) and not failed
        if plain_return or reason is not None:
            self._formats.require_queue_ops(COUNTING_OP_VERSION, "no plain returns or reasons")
        if delay_ms is not None:
            self._formats.require_queue_ops(DELAY_OP_VERSION, "no delays")
        return await self._settle(command, consumer)

    async def touch(self, ids: tuple[int, ...], consumer: str | None) -> Settled:
        """Extend the hold of checked-out messages held by `consumer` (None: by whoever holds each, as
        after a get): each counts from now as just handed out, for the consumer timeout and the lease.
        Needs queue operations version 4 across the cluster: until then Refused `upgrade_in_progress`
        (FormatsNotYetKnown while not known yet). NotLeader and UnknownConsumer (ConsumerEnded) as for
        `settle`; ids not held are named in the warning."""
        self._formats.require_queue_ops(HOLDING_OP_VERSION, "no touches")
        return await self._settle(self._command(Touch, ids, consumer), consumer)

    async def _settle(self, command: Settle | Return | Discard | Touch, consumer: str | None) -> Settled:
        """Replicate a command naming held ids (the consumer heard from, when it is named)."""
        if consumer is not None:
            await self._current_session(consumer)
            self._sessions.touch(consumer)
        reply = await self._submit(command)
        failure = reply.failure if isinstance(reply, Acked) else reply if isinstance(reply, Failure) else None
        if failure is None:
            return Settled()
        if failure.code == UNKNOWN_CONSUMER:
            raise UnknownConsumer(failure.reason)
        return Settled(failure.reason)

    def hold_ms(self, consumer: str | None, over_http: bool = False) -> int:
        """How long a delivery of `consumer` (None: of a manual-ack get) may be held without an ack, nack
        or touch before something happens to it (`ConsumerSessions.hold_ms`)."""
        return self._sessions.hold_ms(consumer, over_http)

    async def browse(
        self, first_id: int, end_id: int, limit: int, max_bytes: int | None = None
    ) -> list[MessageRow]:
        """Up to `limit` messages the queue holds, ready or checked out, with ids from `first_id` to below
        `end_id`, lowest first, while their bodies add up to at most `max_bytes` (the first always): a
        read of the applied state that delivers, counts and moves nothing."""
        return self._rows(self._replica.machine.browse(first_id, end_id, limit), max_bytes)

    async def peek(self, position: int) -> MessageRow | None:
        """The ready message at 1-based `position` in delivery order (returns first), or None past the
        last one: a read of the applied state that moves nothing (BadRequest for a position below 1)."""
        if position < 1:
            raise BadRequest(f"position must be 1 or more, got {position}")
        found = self._replica.machine.peek(position)
        rows = self._rows([found]) if found is not None else []
        return rows[0] if rows else None

    # -- consumers --------------------------------------------------------------------------------

    async def register_consumer(
        self,
        prefetch: int,
        priority: int,
        timeout_ms: int | None,
        since_ms: int | None,
        auto_ack: bool = False,
        owner: str | None = None,
    ) -> str:
        """A new consumer's tag (naming its `owner` when given: `consumer_names`). It may hold `prefetch`
        messages, each for its consumer timeout: `timeout_ms`, else the queue's `x-consumer-timeout`, else
        the node's (`on_timer`). With `since_ms` it reads only messages enqueued at or after then, taking
        them with gets as it polls instead of being pushed deliveries: a reader registered through the log
        once every node reads queue operations version 2 (so a new leader knows it), and before that a
        session of this leader only (FormatsNotYetKnown while a node has not said which it reads). With
        `auto_ack` (AMQP's no-ack) each poll settles what it hands out (`poll`); it needs queue operations
        version 9 across the cluster, until then Refused `upgrade_in_progress`."""
        if auto_ack:
            self._formats.require_queue_ops(AUTO_ACK_OP_VERSION, "no auto-ack consumers")
        tag = self._node.new_token() if owner is None else owned(self._node.new_token(), owner)
        session = self._sessions.register(tag, timeout_ms, since_ms, prefetch, auto_ack)
        if since_ms is not None and not self._formats.reads_queue_ops(READER_OP_VERSION):
            session.unlogged = True
            return tag
        command = self._command(Checkout, tag, prefetch, priority, timeout_ms, since_ms, auto_ack)
        reply = await self._submit(command)
        if isinstance(reply, Failure):
            self._sessions.close(tag)
            if reply.code == QUEUE_DELETING:
                raise Refused(reply.code, reply.reason)
            raise BadRequest(reply.reason, code=reply.code)
        return tag

    async def poll(
        self, tag: str, limit: int, wait_s: float, max_bytes: int | None = None
    ) -> list[MessageRow]:
        """Up to `limit` (at least one) deliveries for consumer `tag`, waiting up to `wait_s` for some
        (none before this leader caught up, `_until_serving`), while their bodies add up to at most
        `max_bytes` (the first always; the others wait for the next poll); an auto-ack consumer's are
        settled before they are answered (`_settled_on_delivery`). UnknownConsumer when the queue has no
        such consumer."""
        limit = max(limit, 1)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        if not await self._until_serving(wait_s):
            return []
        session = self._sessions.current(tag)
        self._sessions.touch(tag)
        session.polls += 1
        try:
            wait_s = max(0.0, deadline - loop.time())
            if session.since_ms is not None:
                taken = await self._read_since(session, limit, wait_s)
            else:
                taken = await session.poll(limit, wait_s, self._sessions.holds(tag))
        finally:
            session.polls -= 1
        self._sessions.touch(tag)
        rows = self._rows(taken, max_bytes)
        if max_bytes is not None and rows and len(rows) < len(taken):  # beyond the budget: the next poll's
            answered = next(i for i, delivery in enumerate(taken) if delivery.id == rows[-1].id) + 1
            session.offer_again(taken[answered:])
            taken = taken[:answered]
        if session.auto_ack and taken:
            return await self._settled_on_delivery(session, taken, rows)
        return rows

    async def _settled_on_delivery(
        self, session: ConsumerSession, taken: list[Delivery], rows: list[MessageRow]
    ) -> list[MessageRow]:
        """The rows of an auto-ack consumer's poll that its `Settle` settled, as its reply names them
        (some may have gone back to the queue first, e.g. past their lease, and been taken by another). A
        settle refused for want of the consumer (it was ended, what it held returned) answers nothing;
        one that fails puts the deliveries back for the next poll (if its outcome is unknown, it may still
        commit: auto-ack is at most once)."""
        try:
            reply = await self._submit(
                self._command(Settle, tuple(delivery.id for delivery in taken), session.tag)
            )
        except BaseException:
            session.offer_again(taken)
            raise
        if isinstance(reply, Failure) and reply.code == UNKNOWN_CONSUMER:
            raise UnknownConsumer(reply.reason, code=reply.code)
        settled = set(reply.ids) if isinstance(reply, Acked) else set()
        return [row for row in rows if row.id in settled]

    async def resume(self, tag: str) -> None:
        """Carry on with consumer `tag` after its queue changed leader (on a new leader, what it holds is
        delivered to it again). UnknownConsumer when the queue has no such consumer."""
        await self._current_session(tag)
        self._sessions.touch(tag)

    async def cancel(self, tag: str) -> None:
        """Cancel a consumer, durable or not: what it holds returns to the queue, as a plain return once
        every node reads queue operations version 3 (a failed delivery before, as it always was);
        FormatsNotYetKnown while a node has not said which it reads. UnknownConsumer when the queue has no
        such consumer; a consumer the leader ended is gone already."""
        if self._sessions.forget_ended(tag):
            return
        plain = self._formats.reads_queue_ops(COUNTING_OP_VERSION)
        await self._until_caught_up()
        durable = self._is_durable(tag)
        session = None if durable else self._sessions.current(tag)
        reply = await self._submit(self._command(Cancel, tag, not plain))
        self._sessions.close(tag)
        if isinstance(reply, Failure) and (session is None or session.since_ms is None):
            raise UnknownConsumer(reply.reason, code=reply.code)

    def has_consumer(self, name: str) -> bool:
        """Whether the queue has a consumer (a reader, a durable consumer) of that name."""
        return self._replica.machine.consumer(name) is not None or self._is_durable(name)

    def consumer_list(self) -> list[ConsumerSummary]:
        """The queue's consumers (readers included) in registration order, then its durable consumers."""
        machine = self._replica.machine
        listed = [
            ConsumerSummary(
                c.name,
                c.prefetch,
                c.priority,
                c.active,
                c.unacknowledged,
                c.timeout_ms,
                c.since_ms,
                c.auto_ack,
            )
            for c in machine.consumers()
        ]
        listed += [
            ConsumerSummary(d.name, None, 0, True, d.unacknowledged, durable=True)
            for d in machine.durable_consumers()
        ]
        return listed

    async def _until_serving(self, wait_s: float) -> bool:
        """Wait up to `wait_s` for this leader to serve consumers (`_catch_up`); True once it does."""
        if not self._serving.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._serving.wait(), wait_s)
        return self._serving.is_set()

    async def _until_caught_up(self) -> None:
        """Wait for this leader to serve consumers; NotLeader (503) when it does not within
        CATCH_UP_WAIT_S."""
        if not await self._until_serving(CATCH_UP_WAIT_S):
            raise NotLeader(f"the leader of queue '{self.name}' has not caught up with its log yet")

    async def _current_session(self, tag: str) -> ConsumerSession:
        """The consumer's session (`ConsumerSessions.current`) once this leader caught up (before, its
        state may not know the consumer yet)."""
        await self._until_caught_up()
        return self._sessions.current(tag)

    async def _read_since(self, session: ConsumerSession, limit: int, wait_s: float) -> list[Delivery]:
        """A reader from a time: what it holds offered again after a leader change, else get what it may
        hold (prefetch) among messages enqueued since then, waiting for newly applied entries until
        `wait_s` runs out."""
        taken = session.take(limit, self._sessions.holds(session.tag))
        if taken:
            return taken
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while True:
            room = min(limit, session.prefetch - len(self._replica.machine.checked_out(session.tag)))
            if room > 0:
                reply = await self._submit(self._command(Get, session.tag, room, False, session.since_ms))
                if isinstance(reply, Deliveries) and reply.deliveries:
                    return list(reply.deliveries)
            remaining = deadline - loop.time()
            if remaining <= 0:
                return []
            await self.wait_applied(remaining)

    # -- durable consumers --------------------------------------------------------------------------

    async def register_durable(self, name: str) -> Position:
        """Register durable consumer `name` (again: nothing changes) and return its position."""
        return await self.durable_checkout(name, 0)

    async def durable_checkout(
        self, name: str, count: int, since_ms: int | None = None, max_bytes: int | None = None
    ) -> Position:
        """Number up to `count` more ready messages for durable consumer `name` (registering it if
        unknown), only those enqueued at or after `since_ms` when given, while their bodies add up to at
        most `max_bytes` (the first one always)."""
        return self._position(
            name, await self._submit(self._command(DurableCheckout, name, count, since_ms, max_bytes))
        )

    async def durable_settle(self, name: str, below: int) -> Position:
        """Settle every delivery of durable consumer `name` numbered below `below` (idempotent)."""
        return self._position(name, await self._submit(self._command(DurableSettle, name, below)))

    async def read_durable_log(self, name: str, start: int, end: int) -> list[MessageRow]:
        """The deliveries of durable consumer `name` numbered `start` to `end - 1`, unchanged, each with
        its `seq`. A range this leader has not applied yet waits for one round through the log;
        UnknownConsumer for an unknown consumer, LogGap when any of them is settled, returned or gone."""
        if not any(i.name == name and end <= i.end for i in self._replica.machine.durable_consumers()):
            await self._submit(self._command(Tick))  # apply all that is committed
        if not self._is_durable(name):
            raise UnknownConsumer(f"no durable consumer '{name}' on queue '{self.name}'")
        try:
            numbered = self._replica.machine.durable_log(name, start, end)
        except (DurableLogGap, KeyError) as exc:
            raise LogGap(str(exc)) from exc
        bodies = self._replica.bodies.get_many(delivery.id for _, delivery in numbered)
        rows = []
        for (seq, delivery), stored in zip(numbered, bodies, strict=True):
            if stored is None:
                raise LogGap(f"the body of delivery {seq} (message {delivery.id}) is gone")
            rows.append(MessageRow.of(delivery, stored, seq))
        return rows

    def _is_durable(self, name: str) -> bool:
        return any(info.name == name for info in self._replica.machine.durable_consumers())

    @staticmethod
    def _position(name: str, reply: Any) -> Position:
        if isinstance(reply, DurablePosition):
            return Position(name, reply.settled, reply.end, reply.taken_bytes)
        if isinstance(reply, Failure) and reply.code == UNKNOWN_CONSUMER:
            raise UnknownConsumer(reply.reason, code=reply.code)
        if isinstance(reply, Failure) and reply.code not in _DURABLE_REFUSALS:
            raise BadRequest(reply.reason, code=reply.code)
        raise _refusal(reply)  # name_in_use, beyond_sequence, queue_deleting: Refused

    # -- redrive tasks ------------------------------------------------------------------------------

    def redrives(self) -> list[RedriveTask]:
        """The queue's redrive tasks as this replica applied them (the running one and the last ended)."""
        return self._replica.machine.redrives()

    def redrive_progress(self) -> list[RedriveProgress]:
        """The queue's redrive tasks, the running one and the last ended, as its callers see them."""
        return [
            RedriveProgress(
                t.task,
                t.state,
                t.target,
                t.since_ms,
                t.until_ms,
                t.rate,
                t.total,
                t.moved,
                t.started_ms,
                t.ended_ms,
                t.reason,
            )
            for t in self.redrives()
        ]

    def redrive(self, task: str) -> RedriveTask | None:
        """Redrive task `task` as this replica applied it, or None."""
        return next((found for found in self.redrives() if found.task == task), None)

    async def start_redrive(
        self, task: str, target: str | None, since_ms: int | None, until_ms: int | None, rate: int | None
    ) -> RedriveProgress:
        """Start redrive task `task` (the same task again: nothing changes) and return it as applied.
        Refused `redrive_running` while another runs, 409 `upgrade_in_progress` before every node reads
        redrive tasks."""
        self._formats.require_queue_ops(REDRIVE_OP_VERSION, "no redrive tasks")
        command = self._command(StartRedrive, task, target, since_ms, until_ms, rate)
        reply = await self._submit(command)
        if isinstance(reply, Failure):
            raise _refusal(reply)
        self._node.redrive_started(self)
        return next(progress for progress in self.redrive_progress() if progress.task == task)

    async def redrive_checkout(self, task: str, serial: int, count: int) -> Position:
        """Number up to `count` more messages of task `task` (running as `serial`) for its consumer;
        UnknownConsumer once it does not run as `serial`."""
        return self._redrive_position(
            task, await self._submit(self._command(RedriveCheckout, task, serial, count))
        )

    async def redrive_settle(self, task: str, serial: int, below: int) -> Position:
        """Task `task`'s messages numbered below `below` reached their targets: they leave the queue."""
        return self._redrive_position(
            task, await self._submit(self._command(RedriveSettle, task, serial, below))
        )

    def _redrive_position(self, task: str, reply: Any) -> Position:
        _raise_if_unknown_task(reply)
        return self._position(CONSUMER_PREFIX + task, reply)

    async def end_redrive(self, task: str, serial: int, state: str, reason: str | None = None) -> None:
        """End task `task` if it runs as `serial`, as `state` (otherwise nothing changes), its reason cut
        to what a reason holds; Refused `redrive_busy` to complete one whose consumer holds messages."""
        reason = None if reason is None else reason[:MAX_REASON_CHARS]
        reply = await self._submit(self._command(EndRedrive, task, serial, state, reason))
        _raise_if_unknown_task(reply)
        if isinstance(reply, Failure):
            raise _refusal(reply)

    async def cancel_redrive(self, task: str) -> None:
        """Cancel task `task` (an ended one: nothing changes); UnknownConsumer when there is none."""
        found = self.redrive(task)
        if found is None:
            raise UnknownConsumer(f"no redrive task '{task}' on queue '{self.name}'", code=UNKNOWN_TASK)
        await self.end_redrive(task, found.serial, CANCELLED, "cancelled")

    def durable_position(self, name: str) -> Position | None:
        """Where durable consumer `name` stands as this replica applied it, or None."""
        info = next((i for i in self._replica.machine.durable_consumers() if i.name == name), None)
        return None if info is None else Position(name, info.settled, info.end, 0)

    # -- at-least-once dead letters -----------------------------------------------------------------

    def dead_letter_route(self) -> DeadLetterRoute | None:
        """Where dead letters go at least once, or None when they do not (then none are pending)."""
        config = self._replica.machine.config
        return config.dead_letter_route if config.dead_letters_at_least_once else None

    def dead_letters_pending(self) -> bool:
        """Whether dead letters wait to go at least once (in the state applied here)."""
        return self.dead_letter_route() is not None and self._replica.machine.stats().dlx_pending > 0

    async def dlx_checkout(self, worker: str, prefetch: int) -> list[tuple[int, StoredMessage, int]]:
        """Up to `prefetch` pending dead letters checked out to `worker` (taking them over from another),
        each (id, message with this death recorded in its headers, priority); none without a pending
        one."""
        if not self.dead_letters_pending():
            return []
        reply = await self._submit(self._command(DlxCheckout, worker, prefetch))
        if not isinstance(reply, Deliveries):
            return []
        now = self._now()
        letters = []
        for delivery, reason, text in zip(reply.deliveries, reply.reasons, reply.reason_texts, strict=True):
            stored = self._replica.bodies.get(delivery.id)
            if stored is None:
                log.error("queue %s: dead letter %d has no body", self.name, delivery.id)
                continue
            headers = with_death(stored.headers, self.name, reason, now, text)
            message = StoredMessage(bytes(stored.body), headers, stored.encoding)
            letters.append((delivery.id, message, delivery.priority))
        return letters

    async def dlx_settle(self, ids: tuple[int, ...]) -> None:
        """The dead-letter target confirmed these messages: they leave the queue."""
        await self._submit(self._command(DlxSettle, ids))

    # -- replicating ----------------------------------------------------------------------------------

    def _now(self) -> int:
        """The leader's time (`LeaderClock`: the wall clock, bounded)."""
        return self._clock.stamp()

    def _command(self, kind: Callable[..., C], *fields: Any) -> C:
        """Every command this leader replicates is built here; a field it cannot take is a BadRequest."""
        with _invalid_is_bad_request():
            return kind(*fields)

    def _envelope(self, command: Command, bodies: list[StoredMessage] | None = None) -> list[Any]:
        """The operation replicating `command`, stamped once with the leader's time, in the version every
        node of the cluster reads (`QueueFormats`, `FormatVersions`)."""
        return encode_queue_op(EntryMeta(self._now()), command, bodies, self._formats.writes_queue_ops())

    async def _submit(self, command: Command, bodies: list[StoredMessage] | None = None) -> Any:
        """Replicate one command and return the state machine's reply once applied on this leader;
        NotLeader (OutcomeUnknown when it may still commit) if it was not committed here."""
        try:
            return await self._host.submit(self.group, self._envelope(command, bodies))
        except ProposalFailed as exc:
            raise not_committed(exc) from exc

    def _rows(self, deliveries: Sequence[Delivery], max_bytes: int | None = None) -> list[MessageRow]:
        """Deliveries with their bodies, leaving out any whose body is no longer stored; with `max_bytes`
        the first of them while their bodies add up to at most that (the first always)."""
        return self._replica.bodies.rows(deliveries, max_bytes)

    def _fitting(self, count: int, since_ms: int | None, max_bytes: int) -> int:
        """How many of the first `count` ready messages (in the order the get takes them, enqueued at or
        after `since_ms` when given) have bodies adding up to at most `max_bytes` in the applied state (1
        at least), looking at no more than FIT_SCAN messages."""
        limit = TakeLimit(count, max_bytes)
        taken_in = self._replica.machine.take_order(windowed=since_ms is not None)
        for message in itertools.islice(taken_in, FIT_SCAN):
            if since_ms is not None and message.enqueued_at < since_ms:
                continue
            if not limit.admits(message.size):
                break
            limit.take(message.size)
        return max(limit.taken, 1)

    async def wait_applied(self, timeout: float | None) -> None:
        """Wait until this leader applies another entry of the queue (or stops or starts leading it, or the
        timeout, if any, passes)."""
        self._applied.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._applied.wait(), timeout)

    # -- what the replica tells (`ReplicaListener`) -------------------------------------------------

    def time_applied(self, now_ms: int) -> None:
        """The leader clock runs on from the queue time applied here."""
        self._clock.observe(now_ms)

    def entry_applied(self) -> None:
        """Wake what waits for this leader to apply an entry (`wait_applied`); the timer reads the
        state's next deadline again."""
        self._applied.set()
        self._deadline_stale = True
        self._node.queue_changed(self)

    def effects_applied(self, effects: list[Any]) -> None:
        """Act on what the state machine asks of its leader: deliveries to sessions (once serving),
        dead letters handed on, an expired queue's deletion asked of the metadata."""
        for effect in effects:
            if isinstance(effect, Deliver):
                if self._serving.is_set():  # else in the state this leader reads once it serves
                    self._sessions.deliver(effect.consumer, effect.deliveries)
            elif isinstance(effect, DeadLetter):
                found = self._replica.bodies.with_bodies(effect.deliveries)
                self._node.dead_lettered(self.name, effect, found, self._now())
            elif isinstance(effect, QueueExpired):
                self._node.request_delete(self.name, self.group)

    def role_changed(self, is_leader: bool) -> None:
        """Sessions are this leadership's own: a new leader serves consumers once it caught up. What
        waits for this leader to apply an entry is woken (`wait_applied`): it may lead no more."""
        self._deadline_stale = True
        self._sessions.close_all()
        self._serving.clear()
        self._applied.set()
        self._node.leadership_changed(self, is_leader)
        if is_leader:
            self._leadership += 1
            self._catch_up()

    # -- catching up and timers ---------------------------------------------------------------------

    def _catch_up(self) -> None:
        """Replicate a Tick of this leadership (unless one is on its way): once it is applied here, this
        leader applied an entry of its own term, so its state holds everything an earlier leader
        committed (Raft's leader completeness), and consumers are served from it (`_caught_up`)."""
        if self._catching_up == self._leadership:
            return
        self._catching_up = self._leadership
        self._fire(self._command(Tick), done=functools.partial(self._caught_up, self._leadership))

    def _caught_up(self, leadership: int, committed: bool) -> None:
        """The catch-up Tick's fate: once it is applied in the same leadership, open a session for every
        holder the state holds (`ConsumerSessions.reopen_holders`) and serve."""
        if self._catching_up == leadership:
            self._catching_up = None
        if not committed or leadership != self._leadership or not self.is_leader:
            return  # another leadership, or none: the timer tries again while this one leads
        self._sessions.reopen_holders()
        self._serving.set()
        self._node.queue_changed(self)

    def on_timer(self) -> float | None:
        """Called periodically on the leader: due Ticks and ended consumers (once it caught up, else its
        catch-up Tick again) go through the log, and a sealed queue's deletion is asked of the metadata
        every DELETE_RETRY_MS until it is gone. Answers in how many ms it must be called again (0: at the
        next tick), or None when nothing can come due until an entry applies or a session opens, which
        call `DoorHost.queue_changed`: an idle queue costs no call meanwhile."""
        if not self.is_leader:
            return None
        if self._deadline_stale:  # the deadline is the applied state's: it moves only with it
            self._deadline_ms, self._deadline_stale = self._replica.machine.next_deadline_ms(), False
        sealed = self._replica.machine.sealed
        if not (sealed or self._sessions.sessions) and self._serving.is_set():
            if self._deadline_ms is None:
                return None
            if (wait := self._deadline_ms - self._now()) > 0:
                return wait  # only the applied state's deadline can come due: not before it
        now = self._now()
        if sealed:
            self._delete_due_ms = self._delete_due_ms or now + DELETE_RETRY_MS
            if now >= self._delete_due_ms:
                self._delete_due_ms = now + DELETE_RETRY_MS
                self._node.request_delete(self.name, self.group)
        deadline = self._deadline_ms
        if deadline is not None and deadline <= now and not self._tick_in_flight:
            self._tick_in_flight = True
            self._fire(self._command(Tick), done=self._tick_done)
        if not self._serving.is_set():
            self._catch_up()
            return 0
        plain_returns = functools.partial(self._formats.reads_queue_ops, COUNTING_OP_VERSION)
        for tag, reason, plain in self._sessions.due_ends(now, plain_returns):
            log.info("queue %s: consumer %s ended: %s", self.name, tag, reason)
            if plain:
                command: Cancel | ConsumerDown = self._command(Cancel, tag, False)  # nothing was in its hands
            else:
                command = self._command(ConsumerDown, tag)
            self._sessions.end(tag, reason)
            self._fire(command, done=functools.partial(self._end_done, tag))
        return 0

    def _tick_done(self, committed: bool) -> None:
        self._tick_in_flight = False

    def _end_done(self, tag: str, committed: bool) -> None:
        """An end that did not commit here is not told, and is decided again: by this leader's timer
        while it serves (the holder's session opened again), else by the next leader's."""
        if not committed:
            self._sessions.end_not_committed(tag, reopen=self._serving.is_set())

    def _fire(self, command: Command, done: Callable[[bool], None] | None = None) -> None:
        """Replicate a command nobody waits for; `done(committed)` once its fate here is known."""
        try:
            future = self._host.submit(self.group, self._envelope(command))
        except Exception as exc:  # not leader any more: the next leader's timer takes over
            log.debug("queue %s: %s not submitted: %s", self.name, type(command).__name__, exc)
            if done is not None:
                done(False)
            return
        future.add_done_callback(lambda f: f.exception() if not f.cancelled() else None)
        if done is not None:
            future.add_done_callback(lambda f: done(not f.cancelled() and f.exception() is None))
