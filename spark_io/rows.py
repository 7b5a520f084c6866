"""The rows the source produces, and how a delivery becomes one."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from api.client_messages import Delivery

SOURCE_SCHEMA = (
    "id LONG, body BINARY, headers STRING, delivery_count INT, published_at TIMESTAMP, queue STRING"
)

Row = tuple[int, bytes, str, int, datetime | None, str]


def delivery_row(queue: str, delivery: Delivery) -> Row:
    """One source row: headers as a JSON object string, `published_at` in UTC."""
    published = None
    if delivery.published_at is not None:
        published = datetime.fromtimestamp(delivery.published_at / 1000, tz=UTC)
    headers = json.dumps(delivery.headers, sort_keys=True, separators=(",", ":"))
    return (delivery.id, delivery.body, headers, delivery.delivery_count, published, queue)
