"""Deliveries as the record batches the source hands Spark: the schema Spark checks, the values."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from quorumq import Delivery
from spark_io.rows import HEADERS_FORMATS, arrow_schema, delivery_batch, source_schema

DELIVERIES = [
    Delivery(
        7,
        b"first",
        {"n": 3, "kind": "direct", "x-death": [{"reason": "rejected"}]},
        2,
        True,
        41,
        1_700_000_000_123,
    ),
    Delivery(9, b"", {}, 0, False, None, None),
]


@pytest.mark.parametrize("headers", HEADERS_FORMATS)
def test_the_batches_have_the_arrow_schema_spark_derives_from_the_source_schema(headers: str) -> None:
    expected = to_arrow_schema(source_schema(headers), timezone="UTC")
    assert arrow_schema(headers).equals(expected)
    assert delivery_batch("q", DELIVERIES, headers).schema.equals(expected)


def test_a_batch_holds_each_delivery_as_a_row_with_headers_as_text_values() -> None:
    rows = delivery_batch("orders", DELIVERIES, "map").to_pylist()
    assert rows == [
        {
            "id": 7,
            "body": b"first",
            "headers": [("n", "3"), ("kind", "direct"), ("x-death", '[{"reason":"rejected"}]')],
            "delivery_count": 2,
            "published_at": datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC),
            "queue": "orders",
            "seq": 41,
            "redelivered": True,
        },
        {
            "id": 9,
            "body": b"",
            "headers": [],
            "delivery_count": 0,
            "published_at": None,
            "queue": "orders",
            "seq": None,
            "redelivered": False,
        },
    ]


def test_with_headers_format_json_the_headers_are_one_sorted_json_object() -> None:
    shown = delivery_batch("orders", DELIVERIES, "json").column("headers").to_pylist()
    assert shown == ['{"kind":"direct","n":3,"x-death":[{"reason":"rejected"}]}', "{}"]


def test_no_deliveries_make_an_empty_batch_of_the_same_schema() -> None:
    batch = delivery_batch("orders", [], "map")
    assert batch.num_rows == 0
    assert batch.schema.equals(arrow_schema("map"))
