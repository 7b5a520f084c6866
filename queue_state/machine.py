"""`QueueMachine`: the quorum queue every replica builds by applying the same commands in order.

`apply(meta, cmd)` mutates the state and returns `(reply, effects)`; it reads no clock (time is
`max(last seen, meta.now_ms)`, the time of the entry the command came in) and performs no I/O. After
every command the machine first makes ready the delayed messages whose time came, and after it expires
messages at the heads, hands ready messages to consumers with credit (the highest priority first; as
many as the backlog controls allow) and enforces drop-head length limits (the lowest priority first).

A queue with `x-message-groups` keeps the ready messages that name a group apart
(`queue_state/message_groups.py`): a hand-out takes the next message of the two, its ungrouped ready
messages and the heads of the groups whose turn it is, by priority and then by id.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any

from queue_state.arguments import MAX_PRIORITY, QueueConfig, parse_arguments
from queue_state.backlog_controls import DISCARDED, discard_below, next_opening_ms, paced_at, room
from queue_state.commands import (
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
from queue_state.consumers import Consumer, ConsumerInfo, ConsumerRegistry, Holder
from queue_state.dead_letters import DeadLetterQueue
from queue_state.dedupe_window import DEFAULT_DEDUPE_MAX, DedupeWindow
from queue_state.delayed import DelayedMessages, Destination
from queue_state.durable import DurableHolder, DurableInfo
from queue_state.effects import (
    Acked,
    Deliveries,
    Delivery,
    DurablePosition,
    Effect,
    EffectCollector,
    Enqueued,
    Failure,
    Ok,
    Purged,
    Rejected,
    Reply,
)
from queue_state.message_groups import NO_GROUP, MessageGroups
from queue_state.messages import NO_EXPIRY, HeldMessage, ReadyMessage, TakeLimit, Window, since_window
from queue_state.policy import NO_POLICY, AppliedPolicy, effective_config
from queue_state.publishers import PublisherDedup
from queue_state.ready import ReadyMessages
from queue_state.redrive import COMPLETED, CONSUMER_PREFIX, ENDED_KEPT, RUNNING, UNKNOWN_TASK, RedriveTask
from queue_state.snapshot import END_OF_SNAPSHOT, SnapshotError, SnapshotReader, pack_chunk, snapshot_header
from queue_state.stats import QueueStats

STRATEGY_CHANGED = "dead_letter_strategy_changed"
QUEUE_DELETING = "queue_deleting"
UNKNOWN_CONSUMER = "unknown_consumer"
DELAYED_IN_A_GROUP = "delayed_in_a_group"
_ROWS_PER_CHUNK = 65536
_PUBLISHERS_PER_CHUNK = 64


class QueueMachine:
    """One quorum queue's replicated state: ready, checked-out and dead-lettered message metadata."""

    def __init__(self, name: str, config: QueueConfig) -> None:
        self.name = name
        self._declared = config
        self._policy = NO_POLICY
        self._config = config
        self._now = 0
        self._next_id = 1
        self._ready = ReadyMessages()
        self._groups = MessageGroups()  # the ready messages of groups, on a queue with message groups
        self._delayed = DelayedMessages()
        self._consumers = ConsumerRegistry(bool(config.single_active_consumer))
        self._get_holders: dict[str, Holder] = {}
        self._durables: dict[str, DurableHolder] = {}
        self._holder_of: dict[int, Holder] = {}
        self._held_bytes = 0
        self._dead_letters = DeadLetterQueue()
        self._publishers = PublisherDedup()
        self._dedupe = DedupeWindow()
        self._dead_lettered: dict[str, int] = {}
        self._dropped: dict[str, int] = {}
        self._last_active_ms: int | None = None
        self._expiry_signalled = False
        self._sealed = False
        self._redrives: dict[str, RedriveTask] = {}
        self._redrive_serial = 0
        self._paced_at: int | None = None  # the last hand-out under an x-dequeue-interval-ms

    @property
    def next_id(self) -> int:
        """The id the next enqueued message gets: every id below it has been handed out."""
        return self._next_id

    @property
    def config(self) -> QueueConfig:
        """The configuration in force: the declared one, overlaid by the applied policy."""
        return self._config

    @property
    def declared_config(self) -> QueueConfig:
        """The configuration the queue was declared with, as changed at runtime (`UpdateConfig`)."""
        return self._declared

    @property
    def policy(self) -> AppliedPolicy:
        """The policy the queue applies (`NO_POLICY` for none)."""
        return self._policy

    @property
    def now_ms(self) -> int:
        """The queue's time: the greatest `EntryMeta.now_ms` applied so far."""
        return self._now

    @property
    def sealed(self) -> bool:
        """True once a `Seal` held: the queue takes no publish or new consumer and is to be deleted."""
        return self._sealed

    def apply(self, meta: EntryMeta, cmd: Command) -> tuple[Reply, list[Effect]]:
        """Apply one committed command with the meta of its entry; return the reply for its caller and
        the effects to carry out."""
        handler = _HANDLERS.get(type(cmd))
        if handler is None:
            raise TypeError(f"not a queue command: {type(cmd).__name__}")
        self._now = max(self._now, meta.now_ms)
        if self._last_active_ms is None:
            self._last_active_ms = self._now
        out = EffectCollector()
        self._come_due()
        reply = handler(self, cmd, out)
        self._serve(out)
        return reply, out.effects()

    # Command handlers

    def _enqueue(self, cmd: Enqueue, out: EffectCollector) -> Reply:
        if self._sealed:
            return self._deleting()
        if self._config.message_groups and any(m.group is not None and m.delay_ms for m in cmd.messages):
            return Failure(  # it would wait out of its group's order, or hold its group back unseen
                DELAYED_IN_A_GROUP,
                "a message of a group takes no delay: its group hands out in publish order (as SQS FIFO)",
            )
        self._mark_used()
        self._dedupe.pass_time(self._now, self._config.dedupe_window)
        deduplicating = self._config.dedupe_window is not None
        message_ids = [message.dedupe_id for message in cmd.messages] if deduplicating else []
        window = None
        if cmd.publisher is not None:
            window = self._publishers.touch(cmd.publisher, self._now)
            if cmd.seq is not None:
                not_new = self._publishers.answer_if_not_new(cmd.publisher, cmd.seq)
                if not_new is not None:
                    return not_new
        first_id, count = self._next_id, len(cmd.messages)
        duplicates = self._dedupe.duplicates(message_ids, first_id) if message_ids else {}
        if len(duplicates) < count and self._config.rejects_publish and self._over_limit(headroom=1):
            return Rejected("reject-publish: the queue is at its length limit")
        self._next_id += count
        queue_ttl = self._config.message_ttl
        expires = [_expires_at(self._now, queue_ttl, message.expiration_ms) for message in cmd.messages]
        priorities = None
        if any(message.priority for message in cmd.messages):
            top = self._config.top_priority
            priorities = [min(message.priority, top) for message in cmd.messages]
        if self._config.discard_mark is not None:  # the mark counts no message already expired
            self._expire_heads(out)
        below = discard_below(self._config, self._ready_count())
        if message_ids and below:  # a message dropped as it arrives is no duplicate, and takes no id
            levels = priorities or [0] * count
            message_ids = [None if levels[p] < below else m for p, m in enumerate(message_ids)]
            duplicates = self._dedupe.duplicates(message_ids, first_id)
        discarded: list[int] = []
        grouping = self._config.message_groups and any(message.group for message in cmd.messages)
        if (
            duplicates
            or grouping
            or below > min(priorities or [0])
            or any(message.delay_ms for message in cmd.messages)
        ):
            discarded = self._enqueue_each(first_id, cmd.messages, expires, priorities, below, duplicates)
        else:
            sizes = [message.size for message in cmd.messages]
            self._ready.push_new(first_id, sizes, self._now, expires, priorities)
        if discarded:
            _count(self._dropped, DISCARDED, len(discarded))
            out.forget_all(discarded)
        if message_ids:
            most = self._config.dedupe_max or DEFAULT_DEDUPE_MAX
            self._dedupe.take(message_ids, first_id, duplicates, self._now, most)
        refused = tuple(duplicates.items())
        if duplicates:
            out.forget_all([first_id + position for position in duplicates])
        if window is not None and cmd.seq is not None:
            window.record(cmd.seq, first_id, count, refused)
        return Enqueued(tuple(range(first_id, first_id + count)), tuple(discarded), refused)

    def _enqueue_each(
        self,
        first_id: int,
        messages: tuple[NewMessage, ...],
        expires: list[int],
        priorities: list[int] | None,
        below: int,
        duplicates: dict[int, int],
    ) -> list[int]:
        """A batch with delayed, discarded, duplicate or grouped messages: a duplicate (its position in
        `duplicates`) is not enqueued, each one below priority `below` is discarded, each delayed one
        waits, the others join their level (or, on a queue with message groups, their group) in order.
        Returns the ids discarded."""
        discarded = []
        grouping = self._config.message_groups
        for offset, (new, expires_at) in enumerate(zip(messages, expires, strict=True)):
            if offset in duplicates:
                continue
            priority = 0 if priorities is None else priorities[offset]
            if priority < below:
                discarded.append(first_id + offset)
                continue
            group = self._groups.enter(new.group) if grouping and new.group is not None else NO_GROUP
            message = ReadyMessage(first_id + offset, new.size, self._now, expires_at, 0, 0, priority, group)
            if new.delay_ms:
                self._delayed.wait(message, _not_before(self._now, new.delay_ms), Destination.PUBLISHED)
            elif group:
                self._groups.push(message)
            else:
                self._ready.push(message)
        return discarded

    def _checkout(self, cmd: Checkout, out: EffectCollector) -> Reply:
        if cmd.consumer in self._durables:
            return Failure("name_in_use", f"{cmd.consumer!r} is a durable consumer")
        if self._sealed and self._consumers.get(cmd.consumer) is None:
            return self._deleting()
        self._mark_used()
        self._consumers.register(
            cmd.consumer, cmd.prefetch, cmd.priority, cmd.timeout_ms, cmd.since_ms, cmd.auto_ack
        )
        return Ok()

    def _release_client(self, cmd: Cancel | ConsumerDown, out: EffectCollector) -> Reply:
        """Cancel and down: the consumer and get holder of that name give back what they hold, as failed
        deliveries after a down and after a Cancel that says so (`Cancel.failed`).

        Only Cancel releases a durable consumer: it never goes down; a redrive task's only when it ends."""
        if self._redrive_of(cmd.consumer) is not None:
            return Failure("name_in_use", f"{cmd.consumer!r} is a redrive task's consumer: cancel the task")
        consumer = self._consumers.remove(cmd.consumer)
        get_holder = self._get_holders.pop(cmd.consumer, None)
        durable = self._durables.pop(cmd.consumer, None) if isinstance(cmd, Cancel) else None
        if consumer is None and get_holder is None and durable is None:
            return Failure(UNKNOWN_CONSUMER, f"no consumer {cmd.consumer!r}")
        failed = cmd.failed if isinstance(cmd, Cancel) else True
        for holder in (consumer, get_holder, durable):
            if holder is not None:
                for held in list(holder.held.values()):
                    self._requeue(self._release(holder, held.message.id), failed, out)
        if (consumer or durable) and not (len(self._consumers) or self._durables):
            self._mark_used()
        return Ok()

    def _settle(self, cmd: Settle, out: EffectCollector) -> Reply:
        """The held ids leave the queue: the reply names them, and a Failure the others (only a Failure
        when none did)."""
        messages, failure = self._take_held(cmd.ids, cmd.consumer)
        if failure is not None and not messages:
            return failure
        ids = [message.id for message in messages]
        out.forget_all(ids)
        for message in messages:
            self._groups.leave(message)
        return Acked(tuple(ids), failure)

    def _return(self, cmd: Return, out: EffectCollector) -> Reply:
        messages, failure = self._take_held(cmd.ids, cmd.consumer)
        for message in messages:
            self._requeue(message, cmd.failed, out, cmd.delay_ms)
        return failure or Ok()

    def _discard(self, cmd: Discard, out: EffectCollector) -> Reply:
        messages, failure = self._take_held(cmd.ids, cmd.consumer)
        for message in messages:
            self._dead_letter(message, "rejected", out, cmd.reason)
        return failure or Ok()

    def _touch(self, cmd: Touch, out: EffectCollector) -> Reply:
        """Each touched message is held from now: it moves to the end of its holder's checkout order, which
        stays ordered by hold time (a holder's first message is its oldest hold)."""
        found, failure = self._held_by(cmd.ids, cmd.consumer)
        for holder, message_id in found:
            if type(holder) is not DurableHolder:
                held = holder.held.pop(message_id)
                holder.held[message_id] = HeldMessage(held.message, self._now)
        return failure or Ok()

    def _get(self, cmd: Get, out: EffectCollector) -> Reply:
        if not cmd.auto_ack and cmd.holder in self._durables:
            return Failure("name_in_use", f"{cmd.holder!r} is a durable consumer")
        self._mark_used()
        reader = None if cmd.auto_ack else self._consumers.get(cmd.holder)
        count, since_ms = cmd.count, cmd.since_ms
        if reader is not None and reader.is_reader:
            count, since_ms = min(count, reader.prefetch - len(reader.held)), reader.since_ms
        deliveries: list[Delivery] = []
        for message in self._hand_out_ready(TakeLimit(count), since_window(since_ms), out):
            deliveries.append(message.delivery())
            if cmd.auto_ack:
                out.forget(message.id)
                self._groups.leave(message)
            elif reader is not None and reader.is_reader:
                self._hold(reader, message, self._now)
            else:
                holder = self._get_holders.setdefault(cmd.holder, Holder(cmd.holder))
                self._hold(holder, message, self._now)
        return Deliveries(tuple(deliveries))

    def _purge(self, cmd: Purge, out: EffectCollector) -> Reply:
        """Remove every ready and delayed message; a group blocked by a delayed one is blocked no more."""
        grouped, delayed = self._groups.clear(), list(self._delayed)
        ids = self._ready.clear() + [message.id for message in grouped] + self._delayed.clear()
        for message in (*grouped, *delayed):
            self._groups.leave(message)
        out.forget_all(ids)
        return Purged(len(ids))

    def _tick(self, cmd: Tick, out: EffectCollector) -> Reply:
        self._publishers.forget_idle(self._now)
        self._dedupe.pass_time(self._now, self._config.dedupe_window)
        lease = self._config.lease_period
        if lease is not None:
            for holder in [*self._consumers, *self._get_holders.values()]:
                while holder.held:
                    oldest = next(iter(holder.held.values()))
                    if oldest.since_ms + lease > self._now:
                        break
                    self._requeue(self._release(holder, oldest.message.id), True, out)
        expiry = self._queue_expiry_ms()
        if expiry is not None and self._now >= expiry:
            self._expiry_signalled = True
            out.queue_expired()
        return Ok()

    def _update_config(self, cmd: UpdateConfig, out: EffectCollector) -> Reply:
        """A configuration changed at runtime; `x-message-groups` stays as declared (not a runtime one)."""
        declared = replace(cmd.config, message_groups=self._declared.message_groups)
        return self._configure(declared, self._policy, out)

    def _apply_policy(self, cmd: ApplyPolicy, out: EffectCollector) -> Reply:
        """Apply the policy chosen at `cmd.revision`, unless the queue applies a later revision's choice
        already (proposed by a leader whose metadata lagged): a revision never goes back."""
        if cmd.revision < self._policy.revision:
            return Ok()
        return self._configure(self._declared, AppliedPolicy(cmd.policy, cmd.arguments, cmd.revision), out)

    def _configure(self, declared: QueueConfig, policy: AppliedPolicy, out: EffectCollector) -> Reply:
        """Put in force `declared` overlaid by `policy`. Leaving at-least-once dead-lettering drops the
        pending dead letters, as RabbitMQ does (counted in `dropped`)."""
        was_at_least_once = self._config.dead_letters_at_least_once
        self._declared, self._policy = declared, policy
        self._config = effective_config(declared, policy.arguments, self.name)
        self._consumers.set_single_active(bool(self._config.single_active_consumer))
        self._paced_at = paced_at(self._config, self._now, 0, self._paced_at)
        self._dedupe.pass_time(self._now, self._config.dedupe_window)
        if was_at_least_once and not self._config.dead_letters_at_least_once:
            ids = self._dead_letters.drop_all()
            _count(self._dropped, STRATEGY_CHANGED, len(ids))
            out.forget_all(ids)
        return Ok()

    def _durable_checkout(self, cmd: DurableCheckout, out: EffectCollector) -> Reply:
        durable = self._durables.get(cmd.consumer)
        if durable is None:
            if self._consumers.get(cmd.consumer) is not None or cmd.consumer in self._get_holders:
                return Failure("name_in_use", f"{cmd.consumer!r} is an ordinary consumer")
            if self._sealed:
                return self._deleting()
            durable = self._durables[cmd.consumer] = DurableHolder(cmd.consumer)
        elif self._redrive_of(cmd.consumer) is not None:
            return Failure("name_in_use", f"{cmd.consumer!r} is a redrive task's consumer")
        taken = self._hand_out_ready(TakeLimit(cmd.count, cmd.max_bytes), since_window(cmd.since_ms), out)
        return self._number(durable, taken)

    def _number(self, durable: DurableHolder, taken: list[ReadyMessage]) -> DurablePosition:
        """Check out ready messages just taken to a durable consumer, numbering each."""
        self._mark_used()
        for message in taken:
            self._hold(durable, message, self._now)
            durable.number(message.id)
        return DurablePosition(durable.settled_below, durable.next_seq, sum(m.size for m in taken))

    def _start_redrive(self, cmd: StartRedrive, out: EffectCollector) -> Reply:
        """Start a task unless one runs; the same task again (running or ended, with the same settings)
        answers Ok and changes nothing, so a retried start never starts two. The task's window ends at
        the messages there now (`end_id`), so it always ends; it counts them (`total`, for progress) and
        takes them through a durable consumer of its own."""
        same = self._redrives.get(cmd.task)
        if same is not None and same.started_as(cmd.target, cmd.since_ms, cmd.until_ms, cmd.rate):
            return Ok()
        running = next((task for task in self._redrives.values() if task.state == RUNNING), None)
        if running is not None:
            return Failure("redrive_running", f"redrive task {running.task!r} is running (one at a time)")
        if self._sealed:
            return self._deleting()
        if cmd.target == self.name:
            return Failure("bad_target", f"queue '{self.name}' cannot redrive into itself")
        consumer = CONSUMER_PREFIX + cmd.task
        if self._holds_under(consumer):
            return Failure("name_in_use", f"{consumer!r} is a consumer of the queue")
        self._redrive_serial += 1
        until_ms = self._now if cmd.until_ms is None else cmd.until_ms
        task = RedriveTask(
            cmd.task, self._redrive_serial, cmd.target, cmd.since_ms, until_ms, self._next_id, cmd.rate,
            self._now, 0,
        )  # fmt: skip
        task.total = sum(1 for m in self.ready_messages() if task.in_window(m.id, m.enqueued_at))
        self._redrives.pop(cmd.task, None)  # an ended task of that name leaves for the new one
        self._redrives[cmd.task] = task
        self._durables[task.consumer] = DurableHolder(task.consumer)
        return Ok()

    def _redrive_checkout(self, cmd: RedriveCheckout, out: EffectCollector) -> Reply:
        task = self._running_redrive(cmd.task, cmd.serial)
        if isinstance(task, Failure):
            return task
        durable = self._durables[task.consumer]
        window = (task.since_ms or 0, task.until_ms, task.end_id)
        return self._number(durable, self._take_ready(TakeLimit(cmd.count), window, out))

    def _redrive_settle(self, cmd: RedriveSettle, out: EffectCollector) -> Reply:
        task = self._running_redrive(cmd.task, cmd.serial)
        if isinstance(task, Failure):
            return task
        return self._settle_durable(self._durables[task.consumer], cmd.below, out)

    def _end_redrive(self, cmd: EndRedrive, out: EffectCollector) -> Reply:
        """End the running task (an ended one, or another serial's: Ok, nothing changes). What its consumer
        holds returns to the queue as plain returns; `completed` only once it holds nothing."""
        task = self._redrives.get(cmd.task)
        if task is None:
            return Failure(UNKNOWN_TASK, f"no redrive task {cmd.task!r}")
        if task.state != RUNNING or task.serial != cmd.serial:
            return Ok()
        durable = self._durables[task.consumer]
        if cmd.state == COMPLETED and durable.held:
            return Failure("redrive_busy", f"redrive task {cmd.task!r} has messages not moved yet")
        for _, held in list(durable.numbered()):
            self._requeue(self._release(durable, held.message.id), False, out)
        del self._durables[task.consumer]
        task.state, task.reason = cmd.state, cmd.reason
        task.moved, task.ended_ms = durable.settled_below, self._now
        ended = [name for name, kept in self._redrives.items() if kept.state != RUNNING]
        for name in ended[: max(len(ended) - ENDED_KEPT, 0)]:
            del self._redrives[name]
        return Ok()

    def _running_redrive(self, name: str, serial: int) -> RedriveTask | Failure:
        """Task `name` while it runs as `serial` (a worker of an earlier task of that name is refused)."""
        task = self._redrives.get(name)
        if task is None or task.state != RUNNING or task.serial != serial:
            return Failure(UNKNOWN_TASK, f"no running redrive task {name!r} #{serial}")
        return task

    def _redrive_of(self, consumer: str) -> RedriveTask | None:
        """The running redrive task whose durable consumer `consumer` is, if any."""
        if not consumer.startswith(CONSUMER_PREFIX):
            return None
        task = self._redrives.get(consumer.removeprefix(CONSUMER_PREFIX))
        return task if task is not None and task.state == RUNNING else None

    def _durable_settle(self, cmd: DurableSettle, out: EffectCollector) -> Reply:
        durable = self._durables.get(cmd.consumer)
        if durable is None:
            return Failure(UNKNOWN_CONSUMER, f"no durable consumer {cmd.consumer!r}")
        if self._redrive_of(cmd.consumer) is not None:
            return Failure("name_in_use", f"{cmd.consumer!r} is a redrive task's consumer")
        return self._settle_durable(durable, cmd.below, out)

    def _settle_durable(self, durable: DurableHolder, below: int, out: EffectCollector) -> Reply:
        """Settle every delivery of a durable consumer numbered below `below`: they leave the queue."""
        if below > durable.next_seq:
            return Failure("beyond_sequence", f"{durable.name!r} has handed out only {durable.next_seq}")
        ids = durable.ids_below(below)
        for message_id in ids:
            self._groups.leave(self._release(durable, message_id))
        out.forget_all(ids)
        durable.settled_below = max(durable.settled_below, below)
        return DurablePosition(durable.settled_below, durable.next_seq)

    def _seal(self, cmd: Seal, out: EffectCollector) -> Reply:
        """Seal when the conditions hold in this state; a sealed queue answers Ok whatever they ask."""
        if not self._sealed:
            if cmd.if_empty and (
                self._ready_count() or self._delayed or self._holder_of or len(self._dead_letters)
            ):
                return Failure("not_empty", f"queue '{self.name}' is not empty")
            if cmd.if_unused and len(self._consumers):
                return Failure("in_use", f"queue '{self.name}' has consumers")
            self._sealed = True
        return Ok()

    def _deleting(self) -> Failure:
        return Failure(QUEUE_DELETING, f"queue '{self.name}' is being deleted")

    def _dlx_checkout(self, cmd: DlxCheckout, out: EffectCollector) -> Reply:
        if not self._config.dead_letters_at_least_once:
            return Failure("not_at_least_once", "the queue does not dead-letter at-least-once")
        letters = self._dead_letters.checkout(cmd.worker, cmd.prefetch)
        return Deliveries(
            tuple(letter.delivery() for letter in letters),
            tuple(letter.reason for letter in letters),
            tuple(letter.reason_text for letter in letters),
        )

    def _dlx_settle(self, cmd: DlxSettle, out: EffectCollector) -> Reply:
        settled, unknown = self._dead_letters.settle(cmd.ids)
        out.forget_all(settled)
        if unknown:
            return Failure("unknown_ids", f"not checked out by the dead-letter worker: {unknown}")
        return Ok()

    # Moving messages

    def _serve(self, out: EffectCollector) -> None:
        """Hand out, then drop the head while over a limit; hand out again when that freed a group (it
        dropped the message that blocked one, waiting for a delay)."""
        self._hand_out(out)
        if not self._config.rejects_publish:
            blocked = self._groups.blocked
            while self._over_limit() and (oldest := self._pop_oldest()) is not None:
                self._dead_letter(oldest, "maxlen", out)
            if self._groups.blocked < blocked:
                self._hand_out(out)

    def _hand_out(self, out: EffectCollector) -> None:
        """Expire the head, deliver to consumers with credit as far as the backlog controls allow."""
        allowed, handed_out = self._room(), 0
        while True:
            self._expire_heads(out)
            if handed_out == allowed or not self._servable():
                break
            consumer = self._consumers.next_with_credit()
            if consumer is None:
                break
            # a run for one consumer, as one at a time would give it: the other heads cannot expire
            # meanwhile (the clock stands still within a command and they do not move)
            run = min(self._consumers.served_in_a_row(consumer), allowed - handed_out)
            if self._groups:
                messages = self._take_in_turn(TakeLimit(run), out)
            else:
                messages = self._ready.pop_run(run, self._now)
            self._hold_all(consumer, messages, self._now)
            out.deliver_all(consumer.name, [message.delivery() for message in messages])
            handed_out += len(messages)
        self._handed_out(handed_out)

    def _pop_oldest(self) -> ReadyMessage | None:
        """What drop-head drops: the lowest priority first, and within it the oldest, waiting or ready
        (the next ready one of that level, a group's head, or a waiting one with a lower id); None when
        the queue holds none."""
        waiting = self._delayed.lowest() if self._delayed else None
        ready = self._ready.lowest()
        grouped = self._groups.lowest() if self._groups else None
        oldest = min((key for key in (waiting, ready, grouped) if key is not None), default=None)
        if oldest is None:
            return None
        if oldest == waiting:
            return self._delayed.pop_waiting(oldest[1])
        return self._ready.pop_lowest() if oldest == ready else self._groups.pop_lowest()

    def _expire_heads(self, out: EffectCollector) -> None:
        expired = self._ready.expire_heads(self._now)
        if self._groups:
            expired += self._groups.expire_heads(self._now)
        for message in expired:
            self._dead_letter(message, "expired", out)

    def _come_due(self) -> None:
        """Delayed messages whose time came: returned ones go back where a return goes now, published
        ones (never of a group: `_enqueue`) take their place among their level's ready messages by id."""
        if self._delayed:
            for message, destination in self._delayed.come_due(self._now):
                if destination is Destination.RETURNED:
                    self._push_returned(message)
                else:
                    self._ready.push_due(message)

    def _push_returned(self, message: ReadyMessage) -> None:
        """A message back to ready: a group's to the head of its group, which it no longer blocks; another
        to its level's returns with a delivery limit, else to its level's tail."""
        if message.group:
            self._groups.push_returned(message)
        elif self._config.delivery_limit_in_force is None:
            self._ready.push(message)
        else:
            self._ready.push_return(message)

    def _room(self) -> int:
        """How many messages the backlog controls let the queue hand out now."""
        return room(self._config, self._now, len(self._holder_of), self._paced_at)

    def _handed_out(self, count: int) -> None:
        """`count` messages were just handed out (a dequeue interval counts from now when any was)."""
        self._paced_at = paced_at(self._config, self._now, count, self._paced_at)

    def _hand_out_ready(
        self, limit: TakeLimit, window: Window | None, out: EffectCollector
    ) -> list[ReadyMessage]:
        """What a get or a durable consumer's checkout takes: `_take_ready` within what the backlog controls
        allow now (lowering `limit.count`: each caller's limit is its own, made for this command)."""
        limit.count = min(limit.count, self._room())
        taken = self._take_ready(limit, window, out)
        self._handed_out(len(taken))
        return taken

    def _take_ready(
        self, limit: TakeLimit, window: Window | None, out: EffectCollector
    ) -> list[ReadyMessage]:
        """Remove the ready messages `limit` admits: in serve order (the highest level first, its returns
        first), or with a `window` the first ones in it (then the heads in it of groups whose turn it is),
        the others staying where they are."""
        self._expire_heads(out)
        if window is not None:
            taken = self._ready.take_in(window, limit)
            return taken + self._groups.take_in(window, limit) if self._groups else taken
        if self._groups:
            return self._take_in_turn(limit, out)
        expired: list[ReadyMessage] = []
        taken = self._ready.take(limit, self._now, expired)
        for message in expired:
            self._dead_letter(message, "expired", out)
        return taken

    def _take_in_turn(self, limit: TakeLimit, out: EffectCollector) -> list[ReadyMessage]:
        """On a queue with message groups, remove the messages `limit` admits one at a time, each the next
        of the two kinds (`_next_ready`), expiring heads after each (the heads must not be expired to begin
        with); a group's head blocks its group."""
        taken = []
        while (head := self._next_ready()) is not None and limit.admits(head.size):
            message = self._groups.pop() if head.group else self._ready.pop()
            limit.take(message.size)
            taken.append(message)
            self._expire_heads(out)
        return taken

    def _next_ready(self) -> ReadyMessage | None:
        """The message a hand-out takes next: of the next ungrouped ready message and the head of the group
        whose turn it is, the one of higher priority, else the one of lower id (the older)."""
        grouped, ready = self._groups.head(), self._ready.head()
        if grouped is None or ready is None:
            return ready if grouped is None else grouped
        return grouped if _goes_first(grouped, ready) else ready

    def _servable(self) -> bool:
        """Whether a ready message may be handed out (not every group is blocked)."""
        return bool(self._ready) or (bool(self._groups) and self._groups.head() is not None)

    def _ready_count(self) -> int:
        """How many messages are ready, grouped or not."""
        return len(self._ready) + len(self._groups)

    def _hold(self, holder: Holder, message: ReadyMessage, since_ms: int) -> None:
        self._hold_all(holder, (message,), since_ms)

    def _hold_all(self, holder: Holder, messages: Iterable[ReadyMessage], since_ms: int) -> None:
        held, holder_of = holder.held, self._holder_of
        for message in messages:
            held[message.id] = HeldMessage(message, since_ms)
            holder_of[message.id] = holder
            self._held_bytes += message.size

    def _release(self, holder: Holder, message_id: int) -> ReadyMessage:
        message = holder.take(message_id).message
        del self._holder_of[message_id]
        self._held_bytes -= message.size
        if not holder.held and self._get_holders.get(holder.name) is holder:
            del self._get_holders[holder.name]
        return message

    def _holds_under(self, name: str) -> bool:
        """True when `name` is a consumer, a get holder or a durable consumer of this queue."""
        return any(
            found is not None
            for found in (self._consumers.get(name), self._get_holders.get(name), self._durables.get(name))
        )

    def _take_held(
        self, ids: tuple[int, ...], owner: str | None
    ) -> tuple[list[ReadyMessage], Failure | None]:
        """Release the ids `owner` (anyone but a durable consumer if None) holds; a Failure names the rest."""
        found, failure = self._held_by(ids, owner)
        return [self._release(holder, message_id) for holder, message_id in found], failure

    def _held_by(
        self, ids: tuple[int, ...], owner: str | None
    ) -> tuple[list[tuple[Holder, int]], Failure | None]:
        """(holder, id) of the ids `owner` (anyone but a durable consumer if None) holds; a Failure names
        the rest, or the owner when it holds nothing under that name."""
        if owner is not None and not self._holds_under(owner):
            return [], Failure(UNKNOWN_CONSUMER, f"no consumer {owner!r}")
        found, unknown, seen = [], [], set()
        for message_id in ids:
            holder = self._holder_of.get(message_id)
            anonymous_durable = owner is None and type(holder) is DurableHolder
            named_again = message_id in seen  # as if the first naming took it already
            if (
                holder is None
                or anonymous_durable
                or (owner is not None and holder.name != owner)
                or named_again
            ):
                unknown.append(message_id)
            else:
                found.append((holder, message_id))
                seen.add(message_id)
        failure = Failure("unknown_ids", f"not checked out: {unknown}") if unknown else None
        return found, failure

    def _requeue(
        self, held: ReadyMessage, failed: bool, out: EffectCollector, delay_ms: int | None = None
    ) -> None:
        """A message back from its holder, one more time acquired: a failed delivery past the delivery
        limit is dead-lettered; the rest go back to returns with a limit, else to the tail, after
        `delay_ms` when given, else after the queue's delayed retry (`QueueConfig.retry_delay_ms`)."""
        message = held.returned(failed)
        limit = self._config.delivery_limit_in_force
        if limit is not None and failed and message.delivery_count > limit:
            self._dead_letter(message, "delivery_limit", out)
            return
        delay = self._config.retry_delay_ms(failed, message.acquired) if delay_ms is None else delay_ms
        if delay:
            self._delayed.wait(message, _not_before(self._now, delay), Destination.RETURNED)
        else:
            self._push_returned(message)

    def _dead_letter(
        self, message: ReadyMessage, reason: str, out: EffectCollector, reason_text: str | None = None
    ) -> None:
        if message.group:  # it leaves its group, which it no longer blocks if it did
            self._groups.leave(message)
            message = message._replace(group=NO_GROUP)
        route = self._config.dead_letter_route
        if self._config.dead_letters_at_least_once:
            self._dead_letters.add(message, reason, reason_text)
            _count(self._dead_lettered, reason)
            return
        if route is None:
            _count(self._dropped, reason)
        else:
            out.dead_letter(reason, route, message.delivery(), reason_text)
            _count(self._dead_lettered, reason)
        out.forget(message.id)

    # Limits and time

    def _limited_count_and_bytes(self) -> tuple[int, int]:
        """What length limits count: ready and delayed plus dead letters pending, never checked-out
        messages."""
        ready, grouped, delayed, dead = self._ready, self._groups, self._delayed, self._dead_letters
        return (
            len(ready) + len(grouped) + len(delayed) + len(dead),
            ready.total_bytes + grouped.total_bytes + delayed.total_bytes + dead.total_bytes,
        )

    def _over_limit(self, headroom: int = 0) -> bool:
        """True when the limited count or bytes exceed a limit minus `headroom` (1: at or over it)."""
        max_length, max_bytes = self._config.max_length, self._config.max_length_bytes
        if max_length is None and max_bytes is None:
            return False
        count, size = self._limited_count_and_bytes()
        return (max_length is not None and count > max_length - headroom) or (
            max_bytes is not None and size > max_bytes - headroom
        )

    def _mark_used(self) -> None:
        self._last_active_ms = self._now
        self._expiry_signalled = False

    def _queue_expiry_ms(self) -> int | None:
        expires = self._config.expires
        in_use = len(self._consumers) or self._durables
        if expires is None or self._expiry_signalled or in_use or self._last_active_ms is None:
            return None
        return self._last_active_ms + expires

    # Queries

    def publish_answered(self, publisher: str, seq: int) -> bool:
        """Whether a publish of (`publisher`, `seq`) would be answered without enqueueing: a duplicate,
        or a seq too old to tell."""
        return self._publishers.answer_if_not_new(publisher, seq) is not None

    def stats(self) -> QueueStats:
        """Counts and bytes by where messages are, and counts of messages that left with a reason."""
        ready, ready_bytes = self._ready_count(), self._ready.total_bytes + self._groups.total_bytes
        unacked, dlx = len(self._holder_of), len(self._dead_letters)
        delayed, delayed_bytes = len(self._delayed), self._delayed.total_bytes
        return QueueStats(
            messages_ready=ready,
            messages_unacknowledged=unacked,
            dlx_pending=dlx,
            messages=ready + delayed + unacked + dlx,
            message_bytes=ready_bytes + delayed_bytes + self._held_bytes + self._dead_letters.total_bytes,
            message_bytes_ready=ready_bytes,
            message_bytes_unacknowledged=self._held_bytes,
            message_bytes_dlx=self._dead_letters.total_bytes,
            messages_delayed=delayed,
            messages_ready_by_priority=self._ready_by_priority(),
            consumers=len(self._consumers),
            publishers=len(self._publishers),
            dead_lettered=dict(self._dead_lettered),
            dropped=dict(self._dropped),
            dedupe_ids=len(self._dedupe),
            dedupe_evicted=self._dedupe.evicted,
            dedupe_refused=self._dedupe.refused,
            groups=self._groups.groups,
            groups_blocked=self._groups.blocked,
        )

    def _ready_by_priority(self) -> dict[int, int]:
        """How many ready messages each level holding any has, grouped or not, highest first."""
        counts = self._ready.counts()
        if not self._groups:
            return counts
        for priority, count in self._groups.counts().items():
            counts[priority] = counts.get(priority, 0) + count
        return dict(sorted(counts.items(), reverse=True))

    def next_deadline_ms(self) -> int | None:
        """The earliest entry time at which a Tick would change something (TTL, lease, a delayed message's
        time, expiry, publishers, a hand-out the dequeue interval or window holds back)."""
        deadlines = []
        opening = next_opening_ms(self._config, self._now, len(self._holder_of), self._paced_at)
        if opening is not None and self._servable() and self._consumers.someone_could_take:
            deadlines.append(opening)
        head_expiry = min(self._ready.head_expires_at(), self._groups.head_expires_at())
        if head_expiry != NO_EXPIRY:
            deadlines.append(head_expiry + 1)
        due = self._delayed.next_due_ms()
        if due is not None:
            deadlines.append(due)
        lease = self._config.lease_period
        if lease is not None:
            deadlines.extend(
                next(iter(holder.held.values())).since_ms + lease
                for holder in (*self._consumers, *self._get_holders.values())
                if holder.held
            )
        for deadline in (self._queue_expiry_ms(), self._publishers.next_forget_ms()):
            if deadline is not None:
                deadlines.append(deadline)
        return min(deadlines) if deadlines else None

    def checked_out(self, consumer: str) -> list[Delivery]:
        """What a consumer (or get holder) of that name holds, in checkout order."""
        named = (self._consumers.get(consumer), self._get_holders.get(consumer), self._durables.get(consumer))
        holders = [h for h in named if h]
        return [held.message.delivery() for holder in holders for held in holder.held.values()]

    def consumers(self) -> list[ConsumerInfo]:
        """Registered consumers (readers included) in registration order."""
        return [self._info(c) for c in self._consumers]

    def consumer(self, name: str) -> ConsumerInfo | None:
        """The registered consumer (or reader) of that name, if any."""
        found = self._consumers.get(name)
        return None if found is None else self._info(found)

    def _info(self, consumer: Consumer) -> ConsumerInfo:
        return ConsumerInfo(
            consumer.name,
            consumer.prefetch,
            consumer.priority,
            self._consumers.is_active(consumer),
            len(consumer.held),
            consumer.timeout_ms,
            consumer.since_ms,
            consumer.auto_ack,
        )

    def holds(self, holder: str, delivery: Delivery) -> bool:
        """True while `holder` (a consumer, get holder or durable consumer of that name) holds the message
        of `delivery` from that very hand-out (it has not come back since: its acquired count is the
        same)."""
        found = self._holder_of.get(delivery.id)
        return (
            found is not None
            and found.name == holder
            and found.held[delivery.id].message.acquired == delivery.acquired_count
        )

    def hold_started_ms(self, holder: str) -> int | None:
        """When the oldest hold of a consumer or get holder of that name began (handed out, or last
        touched), or None when it holds nothing."""
        starts = [
            next(iter(found.held.values())).since_ms
            for found in (self._consumers.get(holder), self._get_holders.get(holder))
            if found is not None and found.held
        ]
        return min(starts, default=None)

    def get_holders(self) -> list[str]:
        """The holders of manual-ack gets that hold messages (a holder is gone once it holds none)."""
        return list(self._get_holders)

    def durable_consumers(self) -> list[DurableInfo]:
        """Durable consumers in registration order."""
        return [durable.info() for durable in self._durables.values()]

    def durable_log(self, consumer: str, start: int, end: int) -> list[tuple[int, Delivery]]:
        """(sequence number, delivery) of a durable consumer's unsettled deliveries `start` to `end - 1`.

        Raises KeyError for an unknown consumer and DurableLogGap when any of them is not checked out."""
        return self._durables[consumer].read(start, end)

    def ready_messages(self) -> Iterator[ReadyMessage]:
        """Ready messages in the order they will be served (the highest priority first; within a level
        returns first, then main and the due published ones by id). On a queue with message groups, first
        those hand-outs would take were nothing settled meanwhile, in that order (`_next_ready`'s rule
        between the ungrouped ones and the heads of the groups whose turn it is), then the groups'
        others (`MessageGroups.behind_heads`)."""
        if not self._groups:
            return iter(self._ready)
        return itertools.chain(
            _hand_out_order(iter(self._ready), self._groups.heads()), self._groups.behind_heads()
        )

    def take_order(self, windowed: bool) -> Iterator[ReadyMessage]:
        """Ready messages in the order a get takes them: `ready_messages` for a get, and for one from a
        time (`windowed`) on a queue with message groups the ungrouped ones first, then the heads of the
        groups whose turn it is (`_take_ready`'s order)."""
        if windowed and self._groups:
            return itertools.chain(iter(self._ready), self._groups.heads())
        return self.ready_messages()

    def delayed_messages(self) -> list[ReadyMessage]:
        """The messages waiting for their time (not ready yet), in no particular order."""
        return list(self._delayed)

    def peek(self, position: int) -> Delivery | None:
        """The ready message at 1-based `position` in the order the serve step takes them
        (`ready_messages`), or None past the last one. Changes nothing; ValueError for a position below 1.
        Expiry happens at the heads only, so a message past its TTL further back is still shown (as
        RabbitMQ's peek does)."""
        if position < 1:
            raise ValueError(f"position must be 1 or more, got {position}")
        if self._groups:
            found = next(itertools.islice(self.ready_messages(), position - 1, None), None)
        else:
            found = self._ready.at(position - 1)
        return None if found is None else found.delivery()

    def browse(self, first_id: int, end_id: int, limit: int) -> list[Delivery]:
        """Up to `limit` of the messages the queue holds, ready, delayed or checked out (not dead letters
        waiting to move), with ids from `first_id` to below `end_id`, lowest id first. Changes nothing."""
        held = [
            holder.held[message_id].message
            for message_id, holder in self._holder_of.items()
            if first_id <= message_id < end_id
        ]
        delayed = [message for message in self._delayed if first_id <= message.id < end_id]
        found = (
            self._ready.between(first_id, end_id) + self._groups.between(first_id, end_id) + held + delayed
        )
        return [message.delivery() for message in heapq.nsmallest(limit, found)]

    def redrives(self) -> list[RedriveTask]:
        """The queue's redrive tasks (the running one and the last ended ones) in the order they started,
        as copies; a running task's `moved` is what its consumer settled so far."""
        return [
            replace(task, moved=self._durables[task.consumer].settled_below)
            if task.state == RUNNING
            else replace(task)
            for task in self._redrives.values()
        ]

    def dead_letter_ids(self) -> list[int]:
        """Ids of at-least-once dead letters not yet confirmed."""
        return [letter.message.id for letter in self._dead_letters]

    # Snapshots

    def snapshot_chunks(self) -> Iterator[bytes]:
        """The whole state as a stream of msgpack chunks, ready messages in bounded column slices."""
        prioritised = self._has_priorities()
        delaying = bool(self._delayed) or any(True for _ in self._ready.due_messages())
        counting = prioritised or delaying or not self._counts_fit_version_3()
        grouped = bool(self._declared.message_groups)
        width = 8 if grouped else 7 if prioritised else 6 if counting else 5  # before versions 12, 6 and 4
        delayed = self._delayed.to_wire(width, self._ready.due_messages())
        readers = self._consumers.has_readers
        applied = self._policy
        policy = (
            {"policy": [applied.name, dict(applied.arguments), applied.revision]} if applied.revision else {}
        )
        redriven = bool(self._redrive_serial)
        paced = {} if self._paced_at is None else {"paced_at": self._paced_at}
        deduplicated = bool(len(self._dedupe) or self._dedupe.evicted or self._dedupe.refused)
        version = (
            12 if grouped else 11 if deduplicated else 10 if paced else 9 if self._consumers.has_auto_ack
            else 8 if redriven else 7 if policy else 6 if prioritised else 5 if delaying else 4 if counting
            else 3 if readers else 2
        )  # fmt: skip
        yield snapshot_header(
            version,
            **policy,
            **paced,
            name=self.name,
            config=self._declared.to_arguments(),
            now=self._now,
            next_id=self._next_id,
            last_active_ms=self._last_active_ms,
            expiry_signalled=self._expiry_signalled,
            dead_lettered=self._dead_lettered,
            dropped=self._dropped,
            consumers=self._consumers.to_wire(),
            sealed=self._sealed,
        )
        for priority, kind, columns in self._ready.column_chunks(_ROWS_PER_CHUNK, width):
            yield pack_chunk("level", [priority, kind, columns]) if priority else pack_chunk(kind, columns)
        holders: list[tuple[bool, Holder]] = [(True, consumer) for consumer in self._consumers]
        holders += [(False, holder) for holder in self._get_holders.values()]
        for is_consumer, holder in holders:
            held = [[*item.message[:width], item.since_ms] for item in holder.held.values()]
            yield pack_chunk("held", [holder.name, is_consumer, held])
        for durable in self._durables.values():
            numbered = [[*item.message[:width], item.since_ms, seq] for seq, item in durable.numbered()]
            yield pack_chunk("durable", [durable.name, durable.next_seq, durable.settled_below, numbered])
        yield pack_chunk("dead_letters", self._dead_letters.to_wire(width))
        for start in range(0, len(delayed), _ROWS_PER_CHUNK):
            yield pack_chunk("delayed", delayed[start : start + _ROWS_PER_CHUNK])
        if redriven:
            yield pack_chunk(
                "redrives", [self._redrive_serial, [t.to_wire() for t in self._redrives.values()]]
            )
        if deduplicated:
            yield pack_chunk("dedupe", self._dedupe.to_wire())
        if grouped:
            for part in self._groups.to_wire(_ROWS_PER_CHUNK):
                yield pack_chunk("groups", part)
        publishers = self._publishers.to_wire()
        for start in range(0, len(publishers), _PUBLISHERS_PER_CHUNK):
            yield pack_chunk("publishers", publishers[start : start + _PUBLISHERS_PER_CHUNK])
        yield pack_chunk(END_OF_SNAPSHOT, None)

    def _counts_fit_version_3(self) -> bool:
        """True when a snapshot of version 3 or before holds this state whole: every message's acquired
        count equals its delivery count (as restoring one makes it) and no dead letter has a reason text.

        Only a plain return or a reject with a reason (fields of queue operations version 3, which a
        leader writes once every node reads it) makes this false, so a queue that never had one still
        snapshots as version 2 or 3, which a node not yet upgraded restores."""
        held = (item.message for holder in self._holders() for item in holder.held.values())
        return (
            self._ready.acquired_is_delivery_count()
            and all(message.acquired == message.delivery_count for message in held)
            and self._dead_letters.only_counted_failures()
        )

    def _has_priorities(self) -> bool:
        """True when a message of the queue, wherever it is, has a priority (only a snapshot of version 6
        holds it: a publish with a priority is of queue operations version 6)."""
        if not self._ready.only_level_zero():
            return True
        held = (item.message for holder in self._holders() for item in holder.held.values())
        elsewhere = (letter.message for letter in self._dead_letters)
        return any(
            message.priority for message in (*held, *self._delayed, *self._ready.due_messages(), *elsewhere)
        )

    def _holders(self) -> Iterator[Holder]:
        """Every holder of checked-out messages: consumers, get holders, durable consumers."""
        yield from self._consumers
        yield from self._get_holders.values()
        yield from self._durables.values()

    @classmethod
    def restore(cls, chunks: Iterable[bytes]) -> QueueMachine:
        """Rebuild a machine from `snapshot_chunks` output; raises `SnapshotError` on bad input."""
        try:
            return cls._restore(SnapshotReader(chunks))
        except SnapshotError:
            raise
        except Exception as error:  # a damaged snapshot can fail in many ways; report one
            raise SnapshotError(f"malformed snapshot: {error!r}") from error

    @classmethod
    def _restore(cls, reader: SnapshotReader) -> QueueMachine:
        header = reader.header
        machine = cls(header["name"], parse_arguments(header["config"]))
        if "policy" in header:
            applied = ApplyPolicy(*header["policy"])
            machine._policy = AppliedPolicy(applied.policy, applied.arguments, applied.revision)
            machine._config = effective_config(machine._declared, applied.arguments, machine.name)
        machine._now = header["now"]
        machine._next_id = header["next_id"]
        machine._last_active_ms = header["last_active_ms"]
        machine._expiry_signalled = header["expiry_signalled"]
        machine._dead_lettered = dict(header["dead_lettered"])
        machine._dropped = dict(header["dropped"])
        machine._sealed = header["sealed"]
        machine._paced_at = header.get("paced_at")
        machine._consumers = ConsumerRegistry.from_wire(
            bool(machine._config.single_active_consumer), header["consumers"]
        )
        for kind, payload in reader.parts():
            if kind in ("returns", "main"):
                machine._ready.extend_from_columns(0, kind, payload)
            elif kind == "level":
                priority, fifo, columns = payload
                if (
                    type(priority) is not int
                    or not 0 < priority <= MAX_PRIORITY
                    or fifo not in ("returns", "main")
                ):
                    raise SnapshotError(f"bad level chunk {priority!r} {fifo!r}")
                machine._ready.extend_from_columns(priority, fifo, columns)
            elif kind == "held":
                machine._restore_held(*payload)
            elif kind == "durable":
                machine._restore_durable(*payload)
            elif kind == "dead_letters":
                machine._dead_letters = DeadLetterQueue.from_wire(payload)
            elif kind == "delayed":
                for message in machine._delayed.extend_from_wire(payload):
                    machine._ready.push_due(message)
            elif kind == "redrives":
                machine._redrive_serial, rows = payload
                machine._redrives = {row[0]: RedriveTask.of_wire(row) for row in rows}
            elif kind == "dedupe":
                machine._dedupe = DedupeWindow.of_wire(payload)
            elif kind == "groups":
                machine._groups.extend_from_wire(*payload)
            elif kind == "publishers":
                machine._publishers.extend_from_wire(payload)
            else:
                raise SnapshotError(f"unknown snapshot chunk {kind!r}")
        machine._groups.restored()
        return machine

    def _restore_held(self, name: str, is_consumer: bool, held: list[list[int]]) -> None:
        holder: Holder | None
        if is_consumer:
            holder = self._consumers.get(name)
        else:
            holder = self._get_holders.setdefault(name, Holder(name))
        if holder is None:
            raise ValueError(f"held messages for unknown consumer {name!r}")
        for *message, since_ms in held:
            self._hold(holder, ReadyMessage.of_wire(message), since_ms)

    def _restore_durable(self, name: str, next_seq: int, settled: int, numbered: list[list[int]]) -> None:
        durable = self._durables[name] = DurableHolder(name, next_seq, settled)
        for *message, since_ms, seq in numbered:
            self._hold(durable, ReadyMessage.of_wire(message), since_ms)
            durable.number(message[0], seq)


def _goes_first(grouped: ReadyMessage, ready: ReadyMessage) -> bool:
    """Whether a group's head is handed out before an ungrouped ready message: the higher priority first,
    then the lower id (the older)."""
    if grouped.priority != ready.priority:
        return grouped.priority > ready.priority
    return grouped.id < ready.id


def _hand_out_order(ready: Iterator[ReadyMessage], heads: Iterator[ReadyMessage]) -> Iterator[ReadyMessage]:
    """Ungrouped ready messages in serve order and groups' heads in turn order, merged as hand-outs take
    them (`_goes_first`)."""
    grouped, plain = next(heads, None), next(ready, None)
    while grouped is not None and plain is not None:
        if _goes_first(grouped, plain):
            yield grouped
            grouped = next(heads, None)
        else:
            yield plain
            plain = next(ready, None)
    if grouped is not None:
        yield grouped
        yield from heads
    if plain is not None:
        yield plain
        yield from ready


def _not_before(now: int, delay_ms: int) -> int:
    """When a message delayed by `delay_ms` at `now` is ready: at the end of time at the latest."""
    return min(now + delay_ms, NO_EXPIRY - 1)


def _expires_at(now: int, queue_ttl: int | None, message_ttl: int | None) -> int:
    """The last ms a message is alive: enqueue time plus the shorter of the queue and message TTLs."""
    if queue_ttl is None and message_ttl is None:
        return NO_EXPIRY
    ttl = min(ttl for ttl in (queue_ttl, message_ttl) if ttl is not None)
    return min(now + ttl, NO_EXPIRY - 1)


def _count(counter: dict[str, int], reason: str, amount: int = 1) -> None:
    if amount:
        counter[reason] = counter.get(reason, 0) + amount


_HANDLERS: dict[type, Callable[[QueueMachine, Any, EffectCollector], Reply]] = {
    Enqueue: QueueMachine._enqueue,
    Checkout: QueueMachine._checkout,
    Cancel: QueueMachine._release_client,
    ConsumerDown: QueueMachine._release_client,
    Settle: QueueMachine._settle,
    Return: QueueMachine._return,
    Discard: QueueMachine._discard,
    Touch: QueueMachine._touch,
    Get: QueueMachine._get,
    Purge: QueueMachine._purge,
    Tick: QueueMachine._tick,
    UpdateConfig: QueueMachine._update_config,
    ApplyPolicy: QueueMachine._apply_policy,
    DlxCheckout: QueueMachine._dlx_checkout,
    DlxSettle: QueueMachine._dlx_settle,
    DurableCheckout: QueueMachine._durable_checkout,
    DurableSettle: QueueMachine._durable_settle,
    Seal: QueueMachine._seal,
    StartRedrive: QueueMachine._start_redrive,
    RedriveCheckout: QueueMachine._redrive_checkout,
    RedriveSettle: QueueMachine._redrive_settle,
    EndRedrive: QueueMachine._end_redrive,
}
