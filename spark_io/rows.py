"""The rows format("quorumq") reads, and how a delivery becomes one.

Headers are a MAP<STRING, STRING> (text values as they are, any other JSON value as its JSON text), or
with the option `headersFormat` = `json` one JSON object string, as before the map existed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

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

Row = tuple[int, bytes, Any, int, datetime | None, str, int | None, bool]


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


def delivery_row(queue: str, delivery: Delivery, headers: str) -> Row:
    """One row: `published_at` in UTC, `seq` the durable consumer's sequence number (None when browsed)."""
    published = None
    if delivery.published_at is not None:
        published = datetime.fromtimestamp(delivery.published_at / 1000, tz=UTC)
    if headers == "map":
        shown: Any = {name: _text(value) for name, value in delivery.headers.items()}
    else:
        shown = _json(delivery.headers)
    return (
        delivery.id,
        delivery.body,
        shown,
        delivery.delivery_count,
        published,
        queue,
        delivery.seq,
        delivery.redelivered,
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else _json(value)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
