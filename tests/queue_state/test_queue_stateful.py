"""Random command sequences against QueueMachine, with the queue's invariants checked after every step.

The test keeps its own ledger from replies and effects only: every id ever enqueued (with its size),
and every id whose body was forgotten together with why it left. The machine's ready, checked-out and
dlx-pending sets must partition the live ids exactly; a dead letter sent at most once names the route
in force (a queue, or an exchange and routing key). Durable consumers' deliveries keep their
sequence numbers and read back unchanged until they leave by a settle, a cancel or the consumer's nack.

Counting (issue 22, feature 5) against a model: a message comes back from its holder one more time
acquired, and one more time failed only when the command says it failed (a Return or Cancel with
`failed`, a ConsumerDown, a lease expiry); a hand-out shows the counts the message had when ready, and
`redelivered` is `acquired_count > 0`; only a failure dead-letters past the delivery limit.

Priorities (feature 1) against a model: a message keeps the priority it was published with, taken as
the queue's top priority when above it; nothing is handed out while a ready message of a higher level
waits; never-returned messages of one level go out in id order; drop-head drops nothing while a message
of a lower level is left.

The backlog controls (issue 40, slice 4) against their rules: nothing is handed out past
`x-max-unacked`, outside the dequeue window, or sooner than the dequeue interval after the last paced
hand-out (one at a time); a publish is discarded exactly when the queue held the mark of ready messages
and the message's priority is below the discard priority; and a ready message that a consumer could
take but the controls hold back always has a Tick due for it.

The deduplication window (issue 41) against its rules: a message is refused as a duplicate only while
the window in force holds the message id, and is answered with the id the latest message enqueued with
that id got; a message id is never enqueued twice within the window unless the window let it go at its
`x-dedupe-max` or changed; a refused message is never enqueued (its body is forgotten at once); and a
(publisher, seq) retry is answered with the ids its first publish was answered, whatever the window
holds since.

Message groups (issue 41, slice 6) against their rules, on a queue with `x-message-groups`: a group's
messages are first handed out in publish order (but those published with a delay, which join their
group when their time comes), a hand-out never leaves an older message of its group ready behind it (a
redelivery is of the group's head), a group never has two messages out (held, or back and waiting for a
delay) and is counted blocked exactly while it has one, and `groups` counts the groups with a message
in the queue. The order of never-returned messages and of priorities is then checked among the
ungrouped messages and the heads of the groups whose turn it is.
"""

from __future__ import annotations

import os
from collections import Counter

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from queue_state_strategies import DURABLE_NAMES, DURABLE_POOL, IDS, NAME_POOL, NAMES, configs, new_messages

from queue_state.backlog_controls import DISCARDED, next_opening_ms
from queue_state.commands import (
    Cancel,
    Checkout,
    ConsumerDown,
    Discard,
    DlxCheckout,
    DlxSettle,
    DurableCheckout,
    DurableSettle,
    Enqueue,
    EntryMeta,
    Get,
    Purge,
    Return,
    Settle,
    Tick,
    Touch,
    UpdateConfig,
)
from queue_state.durable import DurableLogGap
from queue_state.effects import (
    DeadLetter,
    Deliver,
    Deliveries,
    Duplicate,
    DurablePosition,
    Enqueued,
    ForgetBodies,
)
from queue_state.machine import STRATEGY_CHANGED, QueueMachine

HOLDER_NAMES = tuple(dict.fromkeys((*NAME_POOL, *DURABLE_POOL)))
ANSWERS = st.sampled_from(
    [
        Settle,
        Return,
        lambda ids, name: Return(ids, name, failed=False),  # a plain return
        Discard,
        lambda ids, name: Discard(ids, name, reason="no good"),
        lambda ids, name: Return(ids, name, delay_ms=30),  # JetStream's NakWithDelay
        lambda ids, name: Return(ids, name, failed=False, delay_ms=0),  # no delay, whatever the queue's
    ]
)


def _returns_failed(cmd) -> bool | None:
    """Whether what `cmd` returns from holders comes back failed (None: it returns nothing)."""
    if isinstance(cmd, Return | Cancel):
        return cmd.failed
    if isinstance(cmd, ConsumerDown | Tick):
        return True  # a holder gone, a lease expired
    return None


class QueueInvariants(RuleBasedStateMachine):
    """Drives one machine with random commands; the invariants below hold after each of them."""

    @initialize(config=configs())
    def start(self, config) -> None:
        self.machine = QueueMachine("q", config)
        self.now = 0
        self.sizes: dict[int, int] = {}
        self.removed: dict[int, str] = {}
        self.dead_letter_effects = 0
        self.entered_dlx_pending: set[int] = set()
        self.last_first_delivery: dict[int, int] = {}  # priority -> highest id handed out first time
        self.priority_of: dict[int, int] = {}  # id -> its priority, as the queue took it
        self.durable_rows: dict[tuple[str, int], tuple] = {}  # (consumer, seq) -> row read at checkout
        self.durable_read_end: dict[str, int] = {}  # consumer -> the end of what was read back
        self.delayed_ever: set[int] = set()  # ids that waited for a time: outside FIFO order
        self.not_before: dict[int, int] = {}  # id -> the time before which it may not be handed out
        self.paced_at: int | None = None  # the last hand-out while a dequeue interval was in force
        # message id -> (id, time, removals, changes, evicted): the latest message enqueued with it, when,
        # how many times the window had been removed and changed then, and how many ids it had evicted
        self.dedupe_first: dict[str, tuple[int, int, int, int, int]] = {}
        self.dedupe_removals = 0  # the window was removed: it forgot every id
        self.dedupe_changes = 0  # the window changed: a shorter one may have let ids go early
        self.group_of: dict[int, str] = {}  # id -> its group, on a queue with message groups
        self.last_first_in_group: dict[str, int] = {}  # group -> the highest id first handed out
        self.published_delayed: set[int] = set()  # ids published with a delay: they join later
        self.seq_answers: dict[
            int, tuple[int, ...]
        ] = {}  # publisher p's seq -> the ids its publish was answered

    def _apply(self, meta, cmd):
        before_pending = set(self.machine.dead_letter_ids())
        held_counts = {
            d.id: (d.delivery_count, d.acquired_count)
            for name in HOLDER_NAMES
            for d in self.machine.checked_out(name)
        }
        waiting = [*self.machine.ready_messages(), *self.machine.delayed_messages()]
        ready_counts = {m.id: (m.delivery_count, m.acquired) for m in waiting}
        limit = self.machine.config.delivery_limit_in_force
        expired_before = self.machine.stats().dead_lettered.get("expired", 0)
        self.held_before = set(held_counts)
        durable_before = {name: self._durable_held(name) for name in DURABLE_POOL}
        readers = {c.name for c in self.machine.consumers() if c.since_ms is not None}
        reads = isinstance(cmd, Get) and not cmd.auto_ack and cmd.holder in readers
        now = max(self.machine.now_ms, meta.now_ms)
        ready = list(self.machine.ready_messages())
        live = sum(m.expires_at >= now for m in ready)  # at most these expire before the mark's count
        due = sum(self.not_before.get(m.id, 0) <= now for m in self.machine.delayed_messages())
        ready_before = (len(ready), live, due)
        durable_ends = {info.name: info.end for info in self.machine.durable_consumers()}
        window_before = self.machine.config.dedupe_window
        evicted_before = self.machine.stats().dedupe_evicted
        reply, effects = self.machine.apply(meta, cmd)
        if self.machine.config.dedupe_window != window_before:
            self.dedupe_changes += 1
            self.dedupe_removals += self.machine.config.dedupe_window is None
        if isinstance(reply, Enqueued):
            self._check_dedupe(cmd, reply, evicted_before)
            if cmd.seq is not None:
                self.seq_answers[cmd.seq] = reply.answered_ids()
        if isinstance(reply, Duplicate) and reply.ids is not None and cmd.seq in self.seq_answers:
            assert reply.ids == self.seq_answers[cmd.seq], "a seq retry answered otherwise than at first"
        self._check_backlog_controls(cmd, reply, effects, ready_before, durable_ends)
        self._note_delays(meta, cmd, reply)
        self._check_durable_moves(cmd, reply, durable_before)
        self.entered_dlx_pending |= set(self.machine.dead_letter_ids()) - before_pending
        handed_out = [d for e in effects if isinstance(e, Deliver) for d in e.deliveries]
        if isinstance(reply, Enqueued):
            top = self.machine.config.top_priority
            for message_id, message in zip(reply.ids, cmd.messages, strict=True):
                self.sizes[message_id] = message.size
                self.priority_of.setdefault(message_id, min(message.priority, top))
                if self.machine.config.message_groups and message.group is not None:
                    self.group_of[message_id] = message.group
                if message.delay_ms:
                    self.published_delayed.add(message_id)
        if isinstance(reply, Deliveries) and isinstance(cmd, Get) and cmd.since_ms is None and not reads:
            handed_out += reply.deliveries  # a reader from a time skips older ones on purpose
        if reads and reply.deliveries:
            reader = next(c for c in self.machine.consumers() if c.name == cmd.holder)
            assert reader.unacknowledged <= reader.prefetch, "a reader took beyond its prefetch"
            assert all(d.enqueued_at_ms >= reader.since_ms for d in reply.deliveries), (
                "a reader read too early"
            )
        self._check_group_order(cmd, reply, effects, durable_ends)
        for e in effects:
            if isinstance(e, Deliver):
                ungrouped = [d for d in e.deliveries if d.id not in self.group_of]
                for level in {d.priority for d in ungrouped}:
                    ids = [d.id for d in ungrouped if d.acquired_count == 0 and d.priority == level]
                    assert ids == sorted(ids), "a consumer got never-returned messages out of order"
        self._check_priorities(handed_out, effects)
        new_pending = set(self.machine.dead_letter_ids()) - before_pending
        expired = self.machine.stats().dead_lettered.get("expired", 0) - expired_before
        self._check_counts(cmd, reply, effects, held_counts, ready_counts, limit, new_pending, expired)
        for delivery in handed_out:
            assert self.not_before.pop(delivery.id, 0) <= self.machine.now_ms, "handed out before its time"
        for level in {d.priority for d in handed_out}:
            first_time = [
                d.id
                for d in handed_out
                if d.acquired_count == 0
                and d.id not in self.delayed_ever
                and d.priority == level
                and d.id not in self.group_of
            ]
            if first_time:
                last = self.last_first_delivery.get(level, 0)
                assert min(first_time) > last, "FIFO among never-returned messages of a level"
                self.last_first_delivery[level] = max(first_time)
        served = {e.consumer for e in effects if isinstance(e, Deliver)}
        assert not served & {c.name for c in self.machine.consumers() if c.since_ms is not None}, (
            "pushed to a reader"
        )
        for consumer in self.machine.consumers():
            if consumer.name in served:
                assert consumer.unacknowledged <= consumer.prefetch, "a consumer served beyond its prefetch"
        reasons = {d.id: e.reason for e in effects if isinstance(e, DeadLetter) for d in e.deliveries}
        routes = {e.route for e in effects if isinstance(e, DeadLetter)}
        assert routes <= {self.machine.config.dead_letter_route}, "dead-lettered along a route not in force"
        self.dead_letter_effects += len(reasons)
        forgotten = [i for e in effects if isinstance(e, ForgetBodies) for i in e.ids]
        assert len(forgotten) == len(set(forgotten)), "a body forgotten twice in one command"
        for message_id in forgotten:
            assert message_id not in self.removed, "a body forgotten twice"
            self.removed[message_id] = reasons.get(message_id) or self._removal_reason(cmd, reply, message_id)
        kinds = [type(e) for e in effects]
        if DeadLetter in kinds and ForgetBodies in kinds:
            assert kinds.index(ForgetBodies) > max(i for i, k in enumerate(kinds) if k is DeadLetter)

    def _check_backlog_controls(self, cmd, reply, effects, ready_before, durable_ends) -> None:
        """What this command handed out (deliveries, a get's, a durable checkout's) the controls in force
        allowed, and what it discarded is what the mark and priority say: the ready messages a publish
        meets are those before it plus any delayed ones that came due at its time."""
        config, now = self.machine.config, self.machine.now_ms
        count = sum(len(e.deliveries) for e in effects if isinstance(e, Deliver))
        if isinstance(cmd, Get) and isinstance(reply, Deliveries):
            count += len(reply.deliveries)
        if isinstance(cmd, DurableCheckout) and isinstance(reply, DurablePosition):
            count += reply.end - max(durable_ends.get(cmd.consumer, 0), reply.settled)
        if count:
            unacked = self.machine.stats().messages_unacknowledged
            assert config.max_unacked is None or unacked <= config.max_unacked, "handed out past the cap"
            assert config.window is None or config.window.is_open(now), "handed out outside the window"
        interval = config.dequeue_interval_ms
        if interval is None:
            self.paced_at = None
        elif count:
            assert count == 1, "more than one hand-out in an interval"
            assert self.paced_at is None or now >= self.paced_at + interval, "handed out within the interval"
            self.paced_at = now
        if isinstance(reply, Enqueued):
            mark, below = config.discard_mark, config.discard_below_priority
            ready, live, due = ready_before  # the mark counts the due delayed, not the expired
            refused = dict(reply.duplicates)
            for position, (message_id, message) in enumerate(zip(reply.ids, cmd.messages, strict=True)):
                low = mark is not None and min(message.priority, config.top_priority) < below
                if position in refused:
                    assert message_id not in reply.discarded, "a duplicate counted as discarded"
                elif message_id in reply.discarded:
                    assert low and ready + due >= mark, "discarded under the mark or at its priority"
                else:
                    assert not low or live < mark, "kept a message the mark discards"

    def _check_dedupe(self, cmd, reply, evicted_before: int) -> None:
        window = self.machine.config.dedupe_window
        refused = dict(reply.duplicates)
        now = self.machine.now_ms
        for position, (message_id, message) in enumerate(zip(reply.ids, cmd.messages, strict=True)):
            key = message.dedupe_id if window is not None else None
            earlier = None if key is None else self.dedupe_first.get(key)
            held = earlier is not None and earlier[2] == self.dedupe_removals and now < earlier[1] + window
            if position in refused:
                assert held, "refused as a duplicate outside the window"
                assert refused[position] == earlier[0], "a duplicate answered with another id"
            elif key is not None and message_id not in reply.discarded:  # a dropped one takes no id
                let_go = earlier is None or earlier[3] != self.dedupe_changes or evicted_before > earlier[4]
                assert not held or let_go, "a message id enqueued twice within the window"
                entry = (message_id, now, self.dedupe_removals, self.dedupe_changes, evicted_before)
                self.dedupe_first[key] = entry

    def _check_group_order(self, cmd, reply, effects, durable_ends) -> None:
        """Every hand-out of a grouped message (delivered, got, checked out by a durable consumer): first
        ones in publish order within the group, and none leaves an older message of its group ready."""
        handed = [d for e in effects if isinstance(e, Deliver) for d in e.deliveries]
        if isinstance(cmd, Get) and isinstance(reply, Deliveries):
            handed += reply.deliveries
        if isinstance(cmd, DurableCheckout) and isinstance(reply, DurablePosition):
            start = max(durable_ends.get(cmd.consumer, 0), reply.settled)
            handed += [d for _, d in self.machine.durable_log(cmd.consumer, start, reply.end)]
        ready = [m.id for m in self.machine.ready_messages() if m.id not in self.published_delayed]
        for delivery in handed:
            group = self.group_of.get(delivery.id)
            if group is None:
                continue
            if delivery.acquired_count == 0 and delivery.id not in self.published_delayed:
                assert delivery.id > self.last_first_in_group.get(group, 0), "a group's messages out of order"
                self.last_first_in_group[group] = delivery.id
            behind = [i for i in ready if self.group_of.get(i) == group and i < delivery.id]
            assert not behind, f"handed out {delivery.id} before {behind} of its group"

    def _out(self) -> dict[str, list[int]]:
        """Each group's messages out: held by someone, or back from a holder and waiting for a delay."""
        held = [d.id for name in HOLDER_NAMES for d in self.machine.checked_out(name)]
        back = [m.id for m in self.machine.delayed_messages() if m.acquired]
        out: dict[str, list[int]] = {}
        for message_id in held + back:
            if message_id in self.group_of:
                out.setdefault(self.group_of[message_id], []).append(message_id)
        return out

    def _heads(self, handed_out=()) -> tuple[list, list]:
        """The ready messages a hand-out may take next (the ungrouped ones and the heads of the groups
        not blocked: each group's first in `ready_messages`), and the heads of every group. The groups of
        messages `handed_out` count as blocked: they were while this command handed out (an auto-ack
        get's messages leave their groups once it took them)."""
        out = {**self._out(), **{self.group_of[d.id]: [d.id] for d in handed_out if d.id in self.group_of}}
        free, heads, seen = [], [], set()
        for message in self.machine.ready_messages():
            group = self.group_of.get(message.id)
            if group is None:
                free.append(message)
            elif group not in seen:
                seen.add(group)
                heads.append(message)
                if group not in out:
                    free.append(message)
        return free, heads

    def _check_priorities(self, handed_out, effects) -> None:
        """Every message has the priority it was taken with; what was served (from the head) leaves no
        message a hand-out could take of a higher level behind; what drop-head dropped leaves none of a
        lower one (a group's messages but its head do not count)."""
        ready = list(self.machine.ready_messages())
        waiting = self.machine.delayed_messages()
        held = [d for name in HOLDER_NAMES for d in self.machine.checked_out(name)]
        for message in [*ready, *waiting]:
            assert message.priority == self.priority_of[message.id], "a message changed its priority"
        for delivery in [*held, *handed_out]:
            assert delivery.priority == self.priority_of[delivery.id], "a delivery changed its priority"
        free, heads = self._heads(handed_out)
        top_ready = max((message.priority for message in free), default=-1)
        for delivery in handed_out:
            assert delivery.priority >= top_ready, "handed out while a higher priority was ready"
        dropped = [
            d for e in effects if isinstance(e, DeadLetter) and e.reason == "maxlen" for d in e.deliveries
        ]
        ungrouped = [m for m in ready if m.id not in self.group_of]
        dropped_from = {self.group_of.get(d.id) for d in dropped}  # their heads came after the drop
        heads = [m for m in heads if self.group_of[m.id] not in dropped_from]
        lowest_left = min((message.priority for message in [*ungrouped, *heads, *waiting]), default=None)
        for delivery in dropped:
            assert lowest_left is None or delivery.priority <= lowest_left, "dropped above a lower priority"

    def _note_delays(self, meta, cmd, reply) -> None:
        """What waits for a time now, and until when a publish's or a nack's delay holds it back."""
        delayed = {m.id for m in self.machine.delayed_messages()}
        self.delayed_ever |= delayed
        if isinstance(reply, Enqueued):
            for message_id, message in zip(reply.ids, cmd.messages, strict=True):
                if message.delay_ms:
                    self.not_before[message_id] = meta.now_ms + message.delay_ms
        if isinstance(cmd, Return) and cmd.delay_ms:
            for message_id in set(cmd.ids) & delayed & self.held_before:
                self.not_before[message_id] = meta.now_ms + cmd.delay_ms

    def _check_counts(self, cmd, reply, effects, held_counts, ready_counts, limit, new_pending, expired):
        """The model of counting: what came back from a holder, and what was handed out, by the rules.

        A message back from its holder that waits as an at-least-once dead letter went past the delivery
        limit, or expired on its way back (its TTL ran out while held): `expired` such dead letters of
        this command are allowed for, as the pending ones carry no reason outside the machine."""
        failed = _returns_failed(cmd)
        ready_now = {m.id: m for m in [*self.machine.ready_messages(), *self.machine.delayed_messages()]}
        handed = [d for e in effects if isinstance(e, Deliver) for d in e.deliveries]
        handed += list(reply.deliveries) if isinstance(reply, Deliveries) and isinstance(cmd, Get) else []
        limited = {
            d.id
            for e in effects
            if isinstance(e, DeadLetter) and e.reason == "delivery_limit"
            for d in e.deliveries
        }
        rejected = set(cmd.ids) if isinstance(cmd, Discard) else set()
        limited |= {i for i in new_pending if i in held_counts and i not in rejected}
        handed_ids = {d.id for d in handed}
        expected = dict(ready_counts)
        unexplained = 0
        for message_id, (count, acquired) in held_counts.items():
            if not (message_id in ready_now or message_id in handed_ids or message_id in limited):
                continue  # still held, or gone by a settle or a discard
            assert failed is not None, f"{type(cmd).__name__} returned a held message"
            expected[message_id] = (count + failed, acquired + 1)
            if message_id in limited and not (failed and limit is not None and count + 1 > limit):
                unexplained += 1
        assert unexplained <= expired, "dead-lettered without failing"
        for message in ready_now.values():
            assert (message.delivery_count, message.acquired) == expected.get(message.id, (0, 0)), "counted"
            assert message.acquired >= message.delivery_count, "more failures than hand-outs"
        for delivery in handed:
            assert delivery.redelivered == (delivery.acquired_count > 0), "redelivered is not derived"
            if delivery.id in expected:
                assert (delivery.delivery_count, delivery.acquired_count) == expected[delivery.id], "hand-out"

    def _durable_held(self, name: str) -> set[int]:
        return {d.id for d in self.machine.checked_out(name)} if self._is_durable(name) else set()

    def _is_durable(self, name: str) -> bool:
        return any(info.name == name for info in self.machine.durable_consumers())

    def _check_durable_moves(self, cmd, reply, before: dict[str, set[int]]) -> None:
        """A durable consumer's delivery leaves it only by its settle, its cancel, or its own ack or nack of
        named ids (a Settle, Return or Discard naming it, as any holder's)."""
        for name, held in before.items():
            lost = held - self._durable_held(name)
            if not lost:
                continue
            seq_of = {row[1].id: seq for (owner, seq), row in self.durable_rows.items() if owner == name}
            if isinstance(cmd, DurableSettle) and cmd.consumer == name:
                assert all(seq_of[i] < cmd.below for i in lost), "settled a delivery at or above `below`"
            elif isinstance(cmd, Settle | Return | Discard) and cmd.consumer == name:
                assert lost <= set(cmd.ids), "an ack or nack took deliveries it did not name"
            else:
                assert isinstance(cmd, Cancel) and cmd.consumer == name, f"{type(cmd).__name__} took {lost}"
            for message_id in lost:
                del self.durable_rows[(name, seq_of[message_id])]
        known = {info.name for info in self.machine.durable_consumers()}
        for name in set(self.durable_read_end) - known:  # cancelled: its sequence starts again at 0
            del self.durable_read_end[name]
        if isinstance(cmd, DurableCheckout) and isinstance(reply, DurablePosition):
            first_new = max(self.durable_read_end.get(cmd.consumer, 0), reply.settled)
            for row in self.machine.durable_log(cmd.consumer, first_new, reply.end):
                self.durable_rows[(cmd.consumer, row[0])] = row
            self.durable_read_end[cmd.consumer] = max(first_new, reply.end)

    def _removal_reason(self, cmd, reply, message_id: int) -> str:
        if isinstance(reply, Enqueued) and message_id in reply.discarded:
            return DISCARDED
        if isinstance(reply, Enqueued) and message_id in {reply.ids[p] for p, _ in reply.duplicates}:
            return "duplicate"
        if isinstance(cmd, DurableSettle) and message_id in self.held_before:
            return "settled"
        if isinstance(cmd, Settle) and message_id in cmd.ids and message_id in self.held_before:
            return "settled"
        if isinstance(cmd, Get) and cmd.auto_ack and message_id in {d.id for d in reply.deliveries}:
            return "auto_acked"
        if isinstance(cmd, Purge):
            return "purged"
        if isinstance(cmd, DlxSettle) and message_id in cmd.ids:
            return "dead_letter_confirmed"
        if isinstance(cmd, UpdateConfig) and message_id in self.entered_dlx_pending:
            return STRATEGY_CHANGED
        return "dropped"

    def _time(self, step: int) -> int:
        self.now = max(0, self.now + step)  # negative steps: a new leader's clock is behind
        return self.now

    @rule(
        step=st.integers(-20, 60),
        messages=st.lists(new_messages, min_size=1, max_size=4),
        seq=st.none() | st.integers(0, 5),
    )
    def enqueue(self, step, messages, seq) -> None:
        self._apply(EntryMeta(self._time(step)), Enqueue(tuple(messages), None if seq is None else "p", seq))

    @rule(step=st.integers(0, 60), name=NAMES, prefetch=st.integers(1, 3), priority=st.integers(0, 2))
    def checkout(self, step, name, prefetch, priority) -> None:
        self._apply(EntryMeta(self._time(step)), Checkout(name, prefetch, priority))

    @rule(
        step=st.integers(0, 60),
        name=NAMES,
        prefetch=st.integers(1, 3),
        back=st.integers(0, 100),
    )
    def checkout_reader(self, step, name, prefetch, back) -> None:
        now = self._time(step)
        self._apply(EntryMeta(now), Checkout(name, prefetch, since_ms=max(0, now - back)))

    @rule(step=st.integers(0, 60), name=NAMES, down=st.booleans(), failed=st.booleans())
    def cancel(self, step, name, down, failed) -> None:
        self._apply(EntryMeta(self._time(step)), ConsumerDown(name) if down else Cancel(name, failed))

    @rule(step=st.integers(0, 60), kind=ANSWERS, ids=IDS, name=st.none() | NAMES)
    def settle_return_or_discard(self, step, kind, ids, name) -> None:
        self._apply(EntryMeta(self._time(step)), kind(ids, name))

    @rule(data=st.data(), kind=ANSWERS)
    def answer_a_held_message(self, data, kind) -> None:
        """Settle, return or discard something a consumer really holds (random ids rarely hit)."""
        held = [(c.name, d.id) for c in self.machine.consumers() for d in self.machine.checked_out(c.name)]
        if held:
            name, message_id = data.draw(st.sampled_from(held))
            self._apply(EntryMeta(self._time(1)), kind((message_id,), name))

    @rule(data=st.data(), step=st.integers(0, 60))
    def touch_what_a_holder_holds(self, data, step) -> None:
        """Touch all a consumer or get holder holds (or random ids, now and then): it still holds what it
        held (and may be served more: a delayed message may come due), and its oldest hold then began at
        the touch."""
        name = data.draw(NAMES)
        held = [d.id for d in self.machine.checked_out(name) if not self._is_durable(name)]
        ids = tuple(held) if held and data.draw(st.booleans()) else data.draw(IDS)
        meta = EntryMeta(self._time(step))
        self._apply(meta, Touch(ids, name if data.draw(st.booleans()) else None))
        after = [d.id for d in self.machine.checked_out(name) if not self._is_durable(name)]
        assert set(held) <= set(after), "a touch moved what a holder holds"
        if held and set(held) <= set(ids):
            assert self.machine.hold_started_ms(name) == self.machine.now_ms, "a touch did not renew the hold"

    @rule(step=st.integers(0, 60), name=NAMES, count=st.integers(1, 3), auto_ack=st.booleans())
    def get(self, step, name, count, auto_ack) -> None:
        self._apply(EntryMeta(self._time(step)), Get(name, count, auto_ack))

    @rule(
        step=st.integers(0, 60),
        name=NAMES,
        count=st.integers(1, 3),
        auto_ack=st.booleans(),
        back=st.integers(0, 300),
    )
    def get_since(self, step, name, count, auto_ack, back) -> None:
        now = self._time(step)
        self._apply(EntryMeta(now), Get(name, count, auto_ack, since_ms=max(0, now - back)))

    @rule(step=st.integers(0, 400))
    def tick(self, step) -> None:
        self._apply(EntryMeta(self._time(step)), Tick())

    @rule()
    def purge(self) -> None:
        self._apply(EntryMeta(self._time(0)), Purge())

    @rule(config=configs())
    def update_config(self, config) -> None:
        self._apply(EntryMeta(self._time(1)), UpdateConfig(config))

    @rule(worker=st.sampled_from(["w1", "w2"]), prefetch=st.integers(1, 3))
    def dlx_checkout(self, worker, prefetch) -> None:
        self._apply(EntryMeta(self._time(1)), DlxCheckout(worker, prefetch))

    @rule(data=st.data())
    def dlx_settle(self, data) -> None:
        pending = self.machine.dead_letter_ids()
        ids = data.draw(st.lists(st.sampled_from(pending), max_size=3, unique=True)) if pending else []
        self._apply(EntryMeta(self._time(1)), DlxSettle(tuple(ids)))

    @rule(
        step=st.integers(0, 60),
        name=DURABLE_NAMES,
        count=st.integers(0, 4),
        back=st.none() | st.integers(0, 300),
        max_bytes=st.none() | st.integers(1, 40),
    )
    def durable_checkout(self, step, name, count, back, max_bytes) -> None:
        now = self._time(step)
        since = None if back is None else max(0, now - back)
        before = self.machine.durable_consumers()
        self._apply(EntryMeta(now), DurableCheckout(name, count, since_ms=since, max_bytes=max_bytes))
        ends = {info.name: info.end for info in before}
        for info in self.machine.durable_consumers():
            if info.name != name or info.end == ends.get(name, 0):
                continue
            taken = [d for _, d in self.machine.durable_log(name, ends.get(name, 0), info.end)]
            assert since is None or all(d.enqueued_at_ms >= since for d in taken), "took an older one"
            sizes = [self.sizes[d.id] for d in taken]
            assert max_bytes is None or len(sizes) == 1 or sum(sizes) <= max_bytes, "over the bytes"

    @rule(data=st.data(), step=st.integers(0, 60), name=DURABLE_NAMES)
    def durable_settle(self, data, step, name) -> None:
        ends = [info.end for info in self.machine.durable_consumers() if info.name == name]
        below = data.draw(st.integers(0, ends[0] + 1 if ends else 3))
        self._apply(EntryMeta(self._time(step)), DurableSettle(name, below))

    @invariant()
    def durable_deliveries_read_back_unchanged(self) -> None:
        for info in self.machine.durable_consumers():
            rows = {seq: row for (owner, seq), row in self.durable_rows.items() if owner == info.name}
            assert all(info.settled <= seq < info.end for seq in rows), "a held sequence number out of range"
            for seq, row in rows.items():
                assert self.machine.durable_log(info.name, seq, seq + 1) == [row]
            complete = len(rows) == info.end - info.settled
            try:
                assert self.machine.durable_log(info.name, info.settled, info.end) == sorted(rows.values())
                assert complete, "a range with a gap was read without an error"
            except DurableLogGap:
                assert not complete, "a complete range failed to read"

    @invariant()
    def every_message_is_in_exactly_one_place(self) -> None:
        ready = [m.id for m in self.machine.ready_messages()]
        delayed = [m.id for m in self.machine.delayed_messages()]
        held = [d.id for name in HOLDER_NAMES for d in self.machine.checked_out(name)]
        pending = self.machine.dead_letter_ids()
        live = ready + delayed + held + pending
        assert len(live) == len(set(live)), "a message in two places"
        assert set(live).isdisjoint(self.removed), "a removed message is still live"
        assert set(live) | set(self.removed) == set(self.sizes), "a message went missing"

    @invariant()
    def a_hand_out_held_back_by_time_has_a_tick_due(self) -> None:
        """A ready message a consumer has credit for, under the cap, that the serve step left: the dequeue
        window or interval held it back, so the leader must be told when to come back. So too while they
        hold a hand-out back from a reader with room (its waiting get is woken by the Tick)."""
        config = self.machine.config
        consumers = self.machine.consumers()
        unacked = self.machine.stats().messages_unacknowledged
        served = any(c.active and c.since_ms is None and c.unacknowledged < c.prefetch for c in consumers)
        reader = any(c.since_ms is not None and c.unacknowledged < c.prefetch for c in consumers)
        held_back = next_opening_ms(config, self.machine.now_ms, unacked, self.paced_at) is not None
        under_cap = config.max_unacked is None or unacked < config.max_unacked
        servable = bool(self._heads()[0])
        if servable and under_cap and (served or (reader and held_back)):
            assert self.machine.next_deadline_ms() is not None, "held back with no Tick due"

    @invariant()
    def a_group_has_one_message_out_at_most_and_is_blocked_by_it(self) -> None:
        out = self._out()
        assert all(len(ids) == 1 for ids in out.values()), f"a group with two messages out: {out}"
        stats = self.machine.stats()
        assert stats.groups_blocked == len(out), "a group blocked without a message out, or not blocked"
        live = [
            *(m.id for m in self.machine.ready_messages()),
            *(m.id for m in self.machine.delayed_messages()),
            *(d.id for name in HOLDER_NAMES for d in self.machine.checked_out(name)),
        ]
        assert stats.groups == len({self.group_of[i] for i in live if i in self.group_of}), "groups counted"

    @invariant()
    def peek_follows_the_serve_order(self) -> None:
        ready = list(self.machine.ready_messages())
        for position in {1, len(ready) // 2 + 1, len(ready), len(ready) + 1} - {0}:
            found = self.machine.peek(position)
            expected = ready[position - 1].delivery() if position <= len(ready) else None
            assert found == expected, f"peek({position})"

    @invariant()
    def stats_match_the_messages(self) -> None:
        stats = self.machine.stats()
        ready = list(self.machine.ready_messages())
        held = [d.id for name in HOLDER_NAMES for d in self.machine.checked_out(name)]
        pending = self.machine.dead_letter_ids()
        assert (stats.messages_ready, stats.messages_unacknowledged, stats.dlx_pending) == (
            len(ready),
            len(held),
            len(pending),
        )
        delayed = [m.id for m in self.machine.delayed_messages()]
        assert stats.messages_delayed == len(delayed)
        assert stats.messages == len(ready) + len(delayed) + len(held) + len(pending)
        assert stats.message_bytes_ready == sum(self.sizes[m.id] for m in ready)
        assert stats.message_bytes_unacknowledged == sum(self.sizes[i] for i in held)
        assert stats.message_bytes_dlx == sum(self.sizes[i] for i in pending)
        every = [m.id for m in ready] + delayed + held + pending
        assert stats.message_bytes == sum(self.sizes[i] for i in every)

    @invariant()
    def removals_are_counted_by_reason(self) -> None:
        stats = self.machine.stats()
        reasons = Counter(self.removed.values())
        assert (
            sum(stats.dropped.values()) == reasons["dropped"] + reasons[STRATEGY_CHANGED] + reasons[DISCARDED]
        )
        assert stats.dropped.get(STRATEGY_CHANGED, 0) == reasons[STRATEGY_CHANGED]
        assert stats.dropped.get(DISCARDED, 0) == reasons[DISCARDED]
        assert sum(stats.dead_lettered.values()) == self.dead_letter_effects + len(self.entered_dlx_pending)


QueueInvariants.TestCase.settings = settings(
    max_examples=int(os.environ.get("QUEUE_STATE_EXAMPLES", "200")), stateful_step_count=30, deadline=None
)
test_queue_invariants_hold_after_every_command = QueueInvariants.TestCase
