"""The server's deliveries answer: the JSON contract, built as bytes, parses to exactly its fields; the
msgpack extension carries the same fields with every body raw."""

import json

import msgpack

from api.deliveries import json_deliveries, msgpack_deliveries
from cluster.bodies import StoredMessage
from queue_state.effects import Delivery

ROWS = [
    (Delivery(1, 0, False, 10), StoredMessage('héllo "q" \\ \n\x01 ☃'.encode(), {}, "utf8")),
    (Delivery(2, 3, True, 11), StoredMessage(b"\xff\xfe", {"k": "ü", "n": [1, 2.5, None]}, "utf8")),
    (Delivery(3, 0, True, 12), StoredMessage(b"\x00\x01bin", {"x-death": [{"queue": "q"}]}, "base64")),
    (Delivery(4, 1, False, 13), StoredMessage(b"", {}, "base64")),
]
EXPECTED = [
    {
        "id": 1,
        "body": 'héllo "q" \\ \n\x01 ☃',
        "encoding": "utf8",
        "headers": {},
        "delivery_count": 0,
        "redelivered": False,
        "published_at": 10,
    },
    {
        "id": 2,
        "body": "//4=",
        "encoding": "base64",
        "headers": {"k": "ü", "n": [1, 2.5, None], "x-delivery-count": 3},
        "delivery_count": 3,
        "redelivered": True,
        "published_at": 11,
    },
    {
        "id": 3,
        "body": "AAFiaW4=",
        "encoding": "base64",
        "headers": {"x-death": [{"queue": "q"}]},
        "delivery_count": 0,
        "redelivered": True,
        "published_at": 12,
    },
    {
        "id": 4,
        "body": "",
        "encoding": "base64",
        "headers": {"x-delivery-count": 1},
        "delivery_count": 1,
        "redelivered": False,
        "published_at": 13,
    },
]


def test_json_answer_has_the_contract_fields_text_stays_text_and_invalid_utf8_is_base64() -> None:
    assert json.loads(json_deliveries(ROWS)) == EXPECTED


def test_json_answer_carries_durable_sequence_numbers_and_an_empty_batch_is_an_empty_list() -> None:
    with_seqs = json.loads(json_deliveries(ROWS, [7, 8, 9, 10]))
    assert with_seqs == [{**row, "seq": seq} for row, seq in zip(EXPECTED, [7, 8, 9, 10], strict=True)]
    assert json.loads(json_deliveries([])) == []


def test_stored_headers_are_not_changed_by_a_redelivery() -> None:
    json_deliveries(ROWS)
    assert ROWS[1][1].headers == {"k": "ü", "n": [1, 2.5, None]}


def test_msgpack_answer_has_the_same_fields_with_raw_bodies_and_the_published_encoding() -> None:
    rows = msgpack.unpackb(msgpack_deliveries(ROWS, [7, 8, 9, 10]))
    raw = [stored.body for _, stored in ROWS]
    published = [stored.encoding for _, stored in ROWS]
    expected = [
        {**row, "body": body, "encoding": encoding, "seq": seq}
        for row, body, encoding, seq in zip(EXPECTED, raw, published, [7, 8, 9, 10], strict=True)
    ]
    assert rows == expected
    assert msgpack.unpackb(msgpack_deliveries([])) == []
