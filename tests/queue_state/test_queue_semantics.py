"""One test (or a few) per semantic rule of the quorum-queue state machine."""

from __future__ import annotations

from queue_state_helpers import dead_lettered, delivered, enqueue, forgotten, make_machine

from queue_state.arguments import DeadLetterRoute
from queue_state.commands import (
    Cancel,
    Checkout,
    ConsumerDown,
    Discard,
    DlxCheckout,
    DlxSettle,
    Enqueue,
    EntryMeta,
    Get,
    NewMessage,
    Purge,
    Return,
    Settle,
    Tick,
    UpdateConfig,
)
from queue_state.effects import (
    Acked,
    DeadLetter,
    Deliver,
    Deliveries,
    Duplicate,
    Enqueued,
    Failure,
    ForgetBodies,
    Ok,
    Purged,
    QueueExpired,
    Rejected,
)
from queue_state.machine import STRATEGY_CHANGED
from queue_state.publishers import IDLE_MS, WINDOW_SIZE

# FIFO, priority, round-robin, prefetch


def test_consumers_are_served_fifo_by_priority_then_round_robin() -> None:
    m = make_machine()
    m.apply(EntryMeta(0), Checkout("low", prefetch=10, priority=0))
    m.apply(EntryMeta(0), Checkout("a", prefetch=2, priority=5))
    m.apply(EntryMeta(0), Checkout("b", prefetch=2, priority=5))
    _, effects = enqueue(m, 1, count=6)
    assert delivered(effects, "a") == [1, 3]
    assert delivered(effects, "b") == [2, 4]
    assert delivered(effects, "low") == [5, 6]


def test_no_consumer_exceeds_its_prefetch_and_settle_refills_credit() -> None:
    m = make_machine()
    m.apply(EntryMeta(0), Checkout("c", prefetch=2))
    _, effects = enqueue(m, 1, count=5)
    assert delivered(effects) == [1, 2]
    assert m.stats().messages_ready == 3
    _, effects = m.apply(EntryMeta(2), Settle((1,)))
    assert delivered(effects, "c") == [3]
    _, effects = m.apply(EntryMeta(3), Return((2,), "c"))
    assert delivered(effects, "c") == [4]
    _, effects = m.apply(EntryMeta(4), Discard((3,), "c"))
    assert delivered(effects, "c") == [5]
    assert len(m.checked_out("c")) == 2


def test_deliveries_happen_when_they_become_possible() -> None:
    m = make_machine()
    enqueue(m, 1, count=2)
    _, effects = m.apply(EntryMeta(2), Checkout("c", prefetch=5))
    assert effects == [Deliver("c", tuple(d for d in m.checked_out("c")))]
    assert delivered(effects) == [1, 2]


# Single active consumer


def test_single_active_consumer_serves_one_and_the_next_takes_over_on_cancel_or_down() -> None:
    m = make_machine(single_active_consumer=True)
    m.apply(EntryMeta(0), Checkout("first", prefetch=1))
    m.apply(EntryMeta(0), Checkout("low", prefetch=1, priority=0))
    m.apply(EntryMeta(0), Checkout("high", prefetch=1, priority=9))
    _, effects = enqueue(m, 1, count=3)
    assert delivered(effects) == [1]
    assert [c.name for c in m.consumers() if c.active] == ["first"]
    _, effects = m.apply(EntryMeta(2), Cancel("first"))  # 1 goes back to the tail (no delivery limit)
    assert delivered(effects, "high") == [2]
    _, effects = m.apply(EntryMeta(3), ConsumerDown("high"))
    assert delivered(effects, "low") == [3]
    assert [c.name for c in m.consumers() if c.active] == ["low"]


# Publisher dedup


def test_publisher_dedup_answers_a_seen_seq_with_its_ids_even_out_of_order() -> None:
    m = make_machine()
    assert enqueue(m, 1, count=2, publisher="p", seq=5)[0] == Enqueued((1, 2))
    assert enqueue(m, 1, count=1, publisher="p", seq=3)[0] == Enqueued((3,))
    assert enqueue(m, 2, count=2, publisher="p", seq=5)[0] == Duplicate((1, 2))
    assert enqueue(m, 2, count=1, publisher="p", seq=3)[0] == Duplicate((3,))
    assert enqueue(m, 2, count=1, publisher="other", seq=5)[0] == Enqueued((4,))
    assert m.stats().messages_ready == 4


def test_publisher_dedup_seq_below_window_floor_and_watermark_is_duplicate_without_ids() -> None:
    m = make_machine()
    for seq in range(1, WINDOW_SIZE + 2):
        enqueue(m, 1, publisher="p", seq=seq)
    assert enqueue(m, 2, publisher="p", seq=1)[0] == Duplicate(None)
    assert enqueue(m, 2, publisher="p", seq=2)[0] == Duplicate((2,))
    assert m.stats().messages_ready == WINDOW_SIZE + 1


def test_publisher_dedup_forgets_publishers_idle_for_long_on_tick() -> None:
    m = make_machine()
    enqueue(m, 1000, publisher="p", seq=1)
    assert m.next_deadline_ms() == 1000 + IDLE_MS
    m.apply(EntryMeta(1000 + IDLE_MS - 1), Tick())
    assert m.stats().publishers == 1
    m.apply(EntryMeta(1000 + IDLE_MS), Tick())
    assert m.stats().publishers == 0
    assert enqueue(m, 1000 + IDLE_MS, publisher="p", seq=1)[0] == Enqueued((2,))


# Delivery count and delivery limit


def test_delivery_count_counts_nack_lease_expiry_cancel_and_down() -> None:
    m = make_machine(lease_period=100)
    enqueue(m, 0)
    m.apply(EntryMeta(0), Checkout("a", prefetch=1))
    m.apply(EntryMeta(1), Return((1,)))  # nack with requeue
    assert m.checked_out("a")[0].delivery_count == 1
    m.apply(EntryMeta(101), Tick())  # lease expiry; immediately redelivered to a
    assert m.checked_out("a")[0].delivery_count == 2
    m.apply(EntryMeta(102), Cancel("a"))
    m.apply(EntryMeta(103), Checkout("b", prefetch=1))
    m.apply(EntryMeta(104), ConsumerDown("b"))
    m.apply(EntryMeta(105), Checkout("c", prefetch=1))
    delivery = m.checked_out("c")[0]
    assert delivery.delivery_count == 4
    assert delivery.redelivered


def test_delivery_limit_three_allows_four_deliveries_then_dead_letters() -> None:
    m = make_machine(delivery_limit=3, dead_letter_queue="dlq")
    enqueue(m, 0)
    m.apply(EntryMeta(0), Checkout("c", prefetch=1))
    counts = [m.checked_out("c")[0].delivery_count]
    for now in range(1, 4):
        m.apply(EntryMeta(now), Return((1,)))
        counts.append(m.checked_out("c")[0].delivery_count)
    assert counts == [0, 1, 2, 3]
    _, effects = m.apply(EntryMeta(4), Return((1,)))
    assert effects[0] == DeadLetter("delivery_limit", DeadLetterRoute("", "dlq"), effects[0].deliveries)
    assert effects[0].deliveries[0].delivery_count == 4
    assert effects[-1] == ForgetBodies((1,))
    assert m.stats().dead_lettered == {"delivery_limit": 1}


def test_delivery_limit_drops_the_message_when_there_is_no_dead_letter_target() -> None:
    m = make_machine(delivery_limit=0)
    enqueue(m, 0)
    m.apply(EntryMeta(0), Checkout("c", prefetch=1))
    _, effects = m.apply(EntryMeta(1), Return((1,)))
    assert effects == [ForgetBodies((1,))]
    assert m.stats().dropped == {"delivery_limit": 1}
    assert m.stats().messages == 0


def test_redelivered_is_true_for_any_delivery_after_the_first() -> None:
    m = make_machine()
    enqueue(m, 0)
    _, effects = m.apply(EntryMeta(0), Checkout("c", prefetch=1))
    assert not effects[0].deliveries[0].redelivered
    _, effects = m.apply(EntryMeta(1), Return((1,)))
    assert effects[0].deliveries[0].redelivered


# Returns


def test_returned_message_goes_to_the_back_without_delivery_limit() -> None:
    m = make_machine()
    enqueue(m, 0, count=3)
    m.apply(EntryMeta(1), Get("h", count=1, auto_ack=False))
    m.apply(EntryMeta(2), Return((1,)))
    reply, _ = m.apply(EntryMeta(3), Get("h", count=3, auto_ack=True))
    assert [d.id for d in reply.deliveries] == [2, 3, 1]


def test_returned_message_goes_to_returns_queue_served_first_with_delivery_limit() -> None:
    m = make_machine(delivery_limit=5)
    enqueue(m, 0, count=3)
    m.apply(EntryMeta(1), Get("h", count=1, auto_ack=False))
    m.apply(EntryMeta(2), Return((1,)))
    reply, _ = m.apply(EntryMeta(3), Get("h", count=3, auto_ack=True))
    assert [d.id for d in reply.deliveries] == [1, 2, 3]


# Length limits


def test_drop_head_never_drops_a_message_in_delivery() -> None:
    m = make_machine(max_length=2, dead_letter_queue="dlq")
    m.apply(EntryMeta(0), Checkout("c", prefetch=1))
    enqueue(m, 1, count=1)  # id 1 checked out
    _, effects = enqueue(m, 2, count=4)  # ids 2..5 ready; limit 2 keeps 4 and 5
    assert dead_lettered(effects, "maxlen") == [2, 3]
    assert [d.id for d in m.checked_out("c")] == [1]
    assert [msg.id for msg in m.ready_messages()] == [4, 5]
    assert forgotten(effects) == [2, 3]


def test_drop_head_drops_returned_messages_first_and_counts_bytes() -> None:
    m = make_machine(max_length_bytes=25, delivery_limit=9)
    enqueue(m, 0, count=2, size=10)
    m.apply(EntryMeta(1), Get("h", count=1, auto_ack=False))
    m.apply(EntryMeta(2), Return((1,)))  # 1 is in returns, served (and dropped) first
    _, effects = enqueue(m, 3, count=1, size=10)
    assert forgotten(effects) == [1]
    assert m.stats().dropped == {"maxlen": 1}
    assert m.stats().message_bytes_ready == 20


def test_reject_publish_rejects_the_whole_batch_at_the_limit_and_may_overshoot_by_one_batch() -> None:
    m = make_machine(max_length=3, overflow="reject-publish")
    assert enqueue(m, 0, count=2)[0] == Enqueued((1, 2))
    assert enqueue(m, 0, count=5)[0] == Enqueued((3, 4, 5, 6, 7))  # under the limit when it arrived
    reply, _ = enqueue(m, 0, count=1, publisher="p", seq=1)
    assert isinstance(reply, Rejected)
    assert m.stats().messages_ready == 7
    m.apply(EntryMeta(1), Purge())
    assert enqueue(m, 1, count=1, publisher="p", seq=1)[0] == Enqueued((8,))


def test_length_limits_count_ready_and_dlx_pending_but_not_checked_out() -> None:
    m = make_machine(
        max_length=2, overflow="reject-publish", dead_letter_queue="dlq", dead_letter_strategy="at-least-once"
    )
    m.apply(EntryMeta(0), Checkout("c", prefetch=5))
    enqueue(m, 0, count=4)  # all checked out: not counted
    assert isinstance(enqueue(m, 1, count=1)[0], Enqueued)
    m.apply(EntryMeta(2), Discard((1, 2)))  # two dlx-pending
    assert m.stats().dlx_pending == 2
    assert isinstance(enqueue(m, 3, count=1)[0], Rejected)


# TTL


def test_message_ttl_and_per_message_expiration_the_earliest_wins() -> None:
    m = make_machine(message_ttl=100, dead_letter_queue="dlq")
    m.apply(
        EntryMeta(0),
        Enqueue((NewMessage(1, expiration_ms=10), NewMessage(1, expiration_ms=500), NewMessage(1))),
    )
    assert m.next_deadline_ms() == 11
    _, effects = m.apply(EntryMeta(11), Tick())
    assert dead_lettered(effects, "expired") == [1]
    assert m.next_deadline_ms() == 101
    _, effects = m.apply(EntryMeta(101), Tick())
    assert dead_lettered(effects, "expired") == [2, 3]
    assert m.stats().dead_lettered == {"expired": 3}


def test_expired_messages_are_removed_from_the_head_before_delivering() -> None:
    m = make_machine(message_ttl=10)
    enqueue(m, 0, count=2)
    enqueue(m, 5, count=1)
    _, effects = m.apply(EntryMeta(12), Checkout("c", prefetch=5))
    assert delivered(effects) == [3]
    assert forgotten(effects) == [1, 2]
    assert m.stats().dropped == {"expired": 2}


def test_a_consumer_alone_at_its_priority_takes_returns_then_the_main_queue_dropping_expired_heads() -> None:
    """A run served to one consumer keeps the one-at-a-time rules: returned messages first, every
    expired head dead-lettered in queue order before the next delivery, and no more than its credit."""
    m = make_machine(dead_letter_queue="dlq", delivery_limit=5)
    m.apply(EntryMeta(0), Checkout("first", prefetch=2))
    enqueue(m, 0, count=2)  # 1, 2 to "first"
    m.apply(
        EntryMeta(0),
        Enqueue(tuple(NewMessage(1, expiration_ms=e) for e in (None, 5, None, 5, None, None))),
    )  # 3 .. 8, waiting
    m.apply(EntryMeta(1), Cancel("first"))  # 1, 2 return, and stay behind nobody
    _, effects = m.apply(EntryMeta(10), Checkout("c", prefetch=5, priority=1))
    assert delivered(effects, "c") == [1, 2, 3, 5, 7]
    assert dead_lettered(effects, "expired") == [4, 6]
    assert m.stats().messages_ready == 1


def test_message_ttl_zero_is_delivered_only_to_a_waiting_consumer() -> None:
    m = make_machine(message_ttl=0)
    m.apply(EntryMeta(0), Checkout("c", prefetch=1))
    _, effects = enqueue(m, 1, count=2)
    assert delivered(effects) == [1]
    _, effects = m.apply(EntryMeta(2), Tick())
    assert forgotten(effects) == [2]


# Queue expiry


def test_queue_expires_when_unused_for_x_expires() -> None:
    m = make_machine(expires=1000)
    enqueue(m, 0)
    m.apply(EntryMeta(100), Checkout("c", prefetch=1))
    assert m.apply(EntryMeta(5000), Tick())[1] == []  # a consumer keeps it alive
    m.apply(EntryMeta(6000), Cancel("c"))
    assert m.next_deadline_ms() == 7000
    assert m.apply(EntryMeta(6999), Tick())[1] == []
    assert m.apply(EntryMeta(7000), Tick())[1] == [QueueExpired()]
    assert m.apply(EntryMeta(9000), Tick())[1] == []  # signalled once


# Lease


def test_lease_period_returns_unsettled_checkouts_and_gets_with_count_plus_one() -> None:
    m = make_machine(lease_period=50)
    enqueue(m, 0, count=2)
    m.apply(EntryMeta(10), Get("h", count=1, auto_ack=False))
    m.apply(EntryMeta(20), Checkout("c", prefetch=1))
    assert m.next_deadline_ms() == 60
    m.apply(EntryMeta(60), Tick())
    assert m.checked_out("h") == []
    assert m.stats().messages_ready == 1
    m.apply(EntryMeta(70), Tick())  # c's lease on 2 ends; its credit takes 1 from the queue
    assert [(msg.id, msg.delivery_count) for msg in m.ready_messages()] == [(2, 1)]
    assert [(d.id, d.delivery_count) for d in m.checked_out("c")] == [(1, 1)]


# Dead-letter strategies


def test_at_most_once_dead_letter_effect_comes_before_forgetting_bodies() -> None:
    m = make_machine(dead_letter_queue="dlq")
    enqueue(m, 0, count=2)
    m.apply(EntryMeta(1), Get("h", count=2, auto_ack=False))
    _, effects = m.apply(EntryMeta(2), Discard((1, 2), "h"))
    assert [type(e) for e in effects] == [DeadLetter, ForgetBodies]
    assert effects[0].reason == "rejected" and effects[0].route == DeadLetterRoute("", "dlq")
    assert m.stats().dead_lettered == {"rejected": 2}


def test_at_least_once_holds_dead_letters_until_dlx_settle() -> None:
    m = make_machine(overflow="reject-publish", dead_letter_queue="dlq", dead_letter_strategy="at-least-once")
    enqueue(m, 0, count=3)
    m.apply(EntryMeta(1), Get("h", count=3, auto_ack=False))
    _, effects = m.apply(EntryMeta(2), Discard((1, 2, 3)))
    assert effects == []
    assert m.stats().dlx_pending == 3
    assert m.stats().messages == 3
    reply, _ = m.apply(EntryMeta(3), DlxCheckout("w", prefetch=2))
    assert [d.id for d in reply.deliveries] == [1, 2]
    assert reply.reasons == ("rejected", "rejected")
    assert m.apply(EntryMeta(3), DlxCheckout("w", prefetch=2))[0] == Deliveries((), ())
    reply, effects = m.apply(EntryMeta(4), DlxSettle((1, 99)))
    assert isinstance(reply, Failure) and reply.code == "unknown_ids"
    assert effects == [ForgetBodies((1,))]
    reply, _ = m.apply(EntryMeta(5), DlxCheckout("w", prefetch=2))
    assert [d.id for d in reply.deliveries] == [3]


def test_new_dlx_worker_takes_over_and_unsettled_dead_letters_go_back_to_pending() -> None:
    m = make_machine(overflow="reject-publish", dead_letter_queue="dlq", dead_letter_strategy="at-least-once")
    enqueue(m, 0, count=3)
    m.apply(EntryMeta(1), Get("h", count=3, auto_ack=False))
    m.apply(EntryMeta(2), Discard((1, 2, 3)))
    m.apply(EntryMeta(3), DlxCheckout("old", prefetch=2))
    reply, _ = m.apply(EntryMeta(4), DlxCheckout("new", prefetch=3))
    assert [(d.id, d.redelivered) for d in reply.deliveries] == [(1, True), (2, True), (3, False)]
    assert m.apply(EntryMeta(5), DlxSettle((1, 2, 3)))[0] == Ok()
    assert m.stats().messages == 0


def test_switching_away_from_at_least_once_drops_pending_dead_letters() -> None:
    m = make_machine(overflow="reject-publish", dead_letter_queue="dlq", dead_letter_strategy="at-least-once")
    enqueue(m, 0, count=2)
    m.apply(EntryMeta(1), Get("h", count=2, auto_ack=False))
    m.apply(EntryMeta(2), Discard((1, 2)))
    m.apply(EntryMeta(3), DlxCheckout("w", prefetch=1))
    config = make_machine(dead_letter_queue="dlq", overflow="reject-publish").config
    _, effects = m.apply(EntryMeta(4), UpdateConfig(config))
    assert sorted(forgotten(effects)) == [1, 2]
    stats = m.stats()
    assert (stats.dlx_pending, stats.dropped) == (0, {STRATEGY_CHANGED: 2})
    assert isinstance(m.apply(EntryMeta(5), DlxCheckout("w", prefetch=1))[0], Failure)


def test_at_least_once_without_a_dead_letter_target_behaves_as_at_most_once() -> None:
    m = make_machine(overflow="reject-publish", dead_letter_strategy="at-least-once")
    enqueue(m, 0)
    m.apply(EntryMeta(1), Get("h", count=1, auto_ack=False))
    _, effects = m.apply(EntryMeta(2), Discard((1,)))
    assert effects == [ForgetBodies((1,))]
    assert m.stats().dropped == {"rejected": 1}


# Stats and the rest of the API


def test_stats_count_dead_lettered_by_reason_and_bytes_held() -> None:
    m = make_machine(dead_letter_queue="dlq", max_length=3)
    enqueue(m, 0, count=4, size=7)  # one maxlen
    m.apply(EntryMeta(1), Get("h", count=1, auto_ack=False))  # id 2 held
    m.apply(EntryMeta(2), Discard((2,)))
    stats = m.stats()
    assert stats.dead_lettered == {"maxlen": 1, "rejected": 1}
    assert (stats.messages_ready, stats.message_bytes) == (2, 14)
    m.apply(EntryMeta(3), Get("h", count=1, auto_ack=False))
    stats = m.stats()
    assert (stats.messages_unacknowledged, stats.message_bytes_unacknowledged, stats.message_bytes) == (
        1,
        7,
        14,
    )


def test_settle_of_ids_not_held_fails_naming_them_and_settles_the_rest() -> None:
    m = make_machine()
    enqueue(m, 0, count=2)
    m.apply(EntryMeta(0), Checkout("c", prefetch=2))
    reply, effects = m.apply(EntryMeta(1), Settle((1, 7), "c"))
    assert reply == Acked((1,), Failure("unknown_ids", "not checked out: [7]"))
    assert effects == [ForgetBodies((1,))]
    assert m.apply(EntryMeta(1), Settle((2,), "nobody"))[0].code == "unknown_consumer"
    assert m.apply(EntryMeta(1), Cancel("nobody"))[0].code == "unknown_consumer"


def test_get_with_manual_ack_is_held_by_its_holder_and_auto_ack_forgets_at_once() -> None:
    m = make_machine()
    enqueue(m, 0, count=3)
    reply, effects = m.apply(EntryMeta(1), Get("h", count=2, auto_ack=False))
    assert [d.id for d in reply.deliveries] == [1, 2] and effects == []
    assert [d.id for d in m.checked_out("h")] == [1, 2]
    reply, effects = m.apply(EntryMeta(1), Get("other", count=5, auto_ack=True))
    assert [d.id for d in reply.deliveries] == [3] and effects == [ForgetBodies((3,))]
    assert m.apply(EntryMeta(2), Settle((1, 2)))[0] == Acked((1, 2))
    assert m.stats().messages == 0


def test_purge_removes_only_ready_messages() -> None:
    m = make_machine()
    enqueue(m, 0, count=3)
    m.apply(EntryMeta(1), Get("h", count=1, auto_ack=False))
    reply, effects = m.apply(EntryMeta(2), Purge())
    assert reply == Purged(2) and effects == [ForgetBodies((2, 3))]
    assert m.stats().messages_unacknowledged == 1


def test_time_never_goes_backwards_after_a_leader_change() -> None:
    m = make_machine(message_ttl=100)
    enqueue(m, 1000)
    enqueue(m, 500)  # a new leader's clock is behind: stamped as 1000
    assert [msg.expires_at for msg in m.ready_messages()] == [1100, 1100]
    m.apply(EntryMeta(1101), Tick())
    assert m.stats().messages == 0


def test_message_ids_are_assigned_ascending_from_a_counter() -> None:
    m = make_machine()
    assert enqueue(m, 0, count=2)[0] == Enqueued((1, 2))
    assert enqueue(m, 0, count=1)[0] == Enqueued((3,))


# Reading from a time (Logstash-style dead-letter queue reads)


def test_get_since_takes_only_messages_enqueued_at_or_after_it_and_leaves_older_ones() -> None:
    m = make_machine()
    enqueue(m, 100, count=2)
    enqueue(m, 200, count=2)
    enqueue(m, 300, count=1)
    reply, _ = m.apply(EntryMeta(400), Get("reader", count=10, auto_ack=True, since_ms=200))
    assert [d.enqueued_at_ms for d in reply.deliveries] == [200, 200, 300]
    later_ids = [d.id for d in reply.deliveries]
    reply, _ = m.apply(EntryMeta(401), Get("other", count=10, auto_ack=True))
    assert [d.enqueued_at_ms for d in reply.deliveries] == [100, 100]
    assert max(d.id for d in reply.deliveries) < min(later_ids)


def test_get_since_holds_manual_ack_messages_like_any_get() -> None:
    m = make_machine()
    enqueue(m, 100, count=1)
    enqueue(m, 200, count=1)
    reply, _ = m.apply(EntryMeta(300), Get("reader", count=5, auto_ack=False, since_ms=150))
    (got,) = reply.deliveries
    assert got.enqueued_at_ms == 200
    assert m.stats().messages_unacknowledged == 1 and m.stats().messages_ready == 1
    reply, _ = m.apply(EntryMeta(301), Settle((got.id,), "reader"))
    assert reply == Acked((got.id,))


def test_rule_holds_is_true_only_for_the_hand_out_a_holder_still_has() -> None:
    """What a leader checks before a poll hands a buffered delivery out: the holder still holds the message
    from that very hand-out (a return and a new hand-out to the same consumer is another one)."""
    m = make_machine()
    m.apply(EntryMeta(0), Checkout("c", prefetch=1))
    _, effects = enqueue(m, 1)
    (first,) = [d for e in effects if isinstance(e, Deliver) for d in e.deliveries]
    assert m.holds("c", first) and not m.holds("other", first)
    _, effects = m.apply(EntryMeta(2), Return((1,), "c", failed=False))
    (again,) = [d for e in effects if isinstance(e, Deliver) for d in e.deliveries]
    assert (again.id, again.acquired_count) == (1, 1)
    assert m.holds("c", again) and not m.holds("c", first)
    m.apply(EntryMeta(3), Settle((1,), "c"))
    assert not m.holds("c", again)
