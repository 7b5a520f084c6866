"""The server's deliveries answer: the JSON contract, built as bytes, parses to exactly its fields; the
msgpack extension carries the same fields with every body raw."""

import json
from dataclasses import replace

import msgpack

from api import stream_frames as frames
from api.deliveries import json_deliveries, msgpack_deliveries, msgpack_delivery
from cluster.queues.queue_results import MessageRow

ROWS = [
    MessageRow(1, 'héllo "q" \\ \n\x01 ☃'.encode(), "utf8", {}, 0, False, 10),
    MessageRow(2, b"\xff\xfe", "utf8", {"k": "ü", "n": [1, 2.5, None]}, 3, True, 11, acquired_count=4),
    MessageRow(3, b"\x00\x01bin", "base64", {"x-death": [{"queue": "q"}]}, 0, True, 12, acquired_count=2),
    MessageRow(4, b"", "base64", {}, 1, True, 13, acquired_count=1),
]
SEQS = [7, 8, 9, 10]
WITH_SEQS = [replace(row, seq=seq) for row, seq in zip(ROWS, SEQS, strict=True)]
EXPECTED = [
    {
        "id": 1,
        "body": 'héllo "q" \\ \n\x01 ☃',
        "encoding": "utf8",
        "headers": {},
        "delivery_count": 0,
        "redelivered": False,
        "acquired_count": 0,
        "published_at": 10,
    },
    {
        "id": 2,
        "body": "//4=",
        "encoding": "base64",
        "headers": {"k": "ü", "n": [1, 2.5, None], "x-acquired-count": 4, "x-delivery-count": 3},
        "delivery_count": 3,
        "redelivered": True,
        "acquired_count": 4,
        "published_at": 11,
    },
    {
        "id": 3,
        "body": "AAFiaW4=",
        "encoding": "base64",
        "headers": {"x-death": [{"queue": "q"}], "x-acquired-count": 2},
        "delivery_count": 0,
        "redelivered": True,
        "acquired_count": 2,
        "published_at": 12,
    },
    {
        "id": 4,
        "body": "",
        "encoding": "base64",
        "headers": {"x-acquired-count": 1, "x-delivery-count": 1},
        "delivery_count": 1,
        "redelivered": True,
        "acquired_count": 1,
        "published_at": 13,
    },
]


def test_json_answer_has_the_contract_fields_text_stays_text_and_invalid_utf8_is_base64() -> None:
    assert json.loads(json_deliveries(ROWS)) == EXPECTED


def test_json_answer_carries_durable_sequence_numbers_and_an_empty_batch_is_an_empty_list() -> None:
    with_seqs = json.loads(json_deliveries(WITH_SEQS))
    assert with_seqs == [{**row, "seq": seq} for row, seq in zip(EXPECTED, SEQS, strict=True)]
    assert json.loads(json_deliveries([])) == []


def test_stored_headers_are_not_changed_by_a_redelivery() -> None:
    json_deliveries(ROWS)
    assert ROWS[1].headers == {"k": "ü", "n": [1, 2.5, None]}


def test_msgpack_answer_has_the_same_fields_with_raw_bodies_and_the_published_encoding() -> None:
    rows = msgpack.unpackb(msgpack_deliveries(WITH_SEQS))
    expected = [
        {**row, "body": stored.body, "encoding": stored.encoding, "seq": stored.seq}
        for row, stored in zip(EXPECTED, WITH_SEQS, strict=True)
    ]
    assert rows == expected
    assert msgpack.unpackb(msgpack_deliveries([])) == []


def test_msgpack_answer_takes_bodies_as_views_and_integers_of_any_size() -> None:
    entry = b"\x00" * 3 + b"y" * 70_000
    row = MessageRow(2**63 - 1, memoryview(entry)[3:], "base64", {}, 2**32, False, -(2**63), 2**64 - 1)
    (decoded,) = msgpack.unpackb(msgpack_deliveries([row]))
    assert decoded["body"] == b"y" * 70_000
    assert (decoded["id"], decoded["delivery_count"], decoded["published_at"], decoded["seq"]) == (
        2**63 - 1,
        2**32,
        -(2**63),
        2**64 - 1,
    )


def test_a_deliver_frame_carries_the_msgpack_answer_as_its_messages() -> None:
    frame = msgpack.unpackb(frames.deliver("consumer-ü", ROWS))
    assert frame == {
        "op": "deliver",
        "tag": "consumer-ü",
        "messages": msgpack.unpackb(msgpack_deliveries(ROWS)),
    }


def test_one_msgpack_delivery_is_the_map_a_deliveries_answer_holds() -> None:
    answer = msgpack.unpackb(msgpack_deliveries(WITH_SEQS))
    assert [msgpack.unpackb(msgpack_delivery(row)) for row in WITH_SEQS] == answer
