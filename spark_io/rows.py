"""The rows format("quorumq") reads, and how deliveries become them: one Arrow record batch per page of
deliveries, handed to Spark as it is (no Python row per message for Spark to convert).

Headers are a MAP<STRING, STRING> (text values as they are, any other JSON value as its JSON text), or
with the option `headersFormat` = `json` one JSON object string, as before the map existed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from quorumq import Delivery
from spark_io.option_values import one_of

HEADERS_FORMATS = ("map", "json")
READ_FROM = "quorumq.read_from"


def headers_format(options: Mapping[str, str]) -> str:
    """The `headersFormat` option: `map` (the default) or `json`."""
    return one_of(options, "headersFormat", HEADERS_FORMATS)


def source_schema(headers: str) -> StructType:
    """The schema of the rows, for a `headersFormat`. The `queue` column carries the metadata
    READ_FROM, which Spark keeps while the column passes through unchanged: the sink does not route
    by such a column, so a stream piped from one queue into another does not go back where it came from."""
    return StructType(
        [
            StructField("id", LongType()),
            StructField("body", BinaryType()),
            StructField("headers", MapType(StringType(), StringType()) if headers == "map" else StringType()),
            StructField("delivery_count", IntegerType()),
            StructField("published_at", TimestampType()),
            StructField("queue", StringType(), metadata={READ_FROM: True}),
            StructField("seq", LongType()),
            StructField("redelivered", BooleanType()),
        ]
    )


def arrow_schema(headers: str) -> pa.Schema:
    """`source_schema(headers)` in Arrow, as Spark expects a reader's batches (timestamps in UTC)."""
    shown = pa.map_(pa.string(), pa.string()) if headers == "map" else pa.string()
    return pa.schema(
        [
            ("id", pa.int64()),
            ("body", pa.binary()),
            ("headers", shown),
            ("delivery_count", pa.int32()),
            ("published_at", pa.timestamp("us", tz="UTC")),
            ("queue", pa.string()),
            ("seq", pa.int64()),
            ("redelivered", pa.bool_()),
        ]
    )


def delivery_batch(queue: str, deliveries: Sequence[Delivery], headers: str) -> pa.RecordBatch:
    """The rows of `deliveries` as one record batch: `published_at` in UTC, `seq` the durable consumer's
    sequence number (null when browsed)."""
    schema = arrow_schema(headers)
    if headers == "map":
        shown: list[Any] = [[(name, _text(value)) for name, value in d.headers.items()] for d in deliveries]
    else:
        shown = [_json(d.headers) for d in deliveries]
    published = [None if d.published_at is None else d.published_at * 1000 for d in deliveries]
    columns = [
        [d.id for d in deliveries],
        [d.body for d in deliveries],
        shown,
        [d.delivery_count for d in deliveries],
        published,
        [queue] * len(deliveries),
        [d.seq for d in deliveries],
        [d.redelivered for d in deliveries],
    ]
    arrays = [pa.array(values, type=field.type) for values, field in zip(columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else _json(value)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
