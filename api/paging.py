"""RabbitMQ's management API list parameters: filter by name, sort, page, pick columns.

`GET /api/queues?page=2&page_size=50&name=orders&use_regex=false&sort=messages&sort_reverse=true`
answers a page object (`items`, `page`, `page_size`, `page_count`, `filtered_count`, `item_count`,
`total_count`) as RabbitMQ's does; without `page` the answer stays a plain list, filtered and sorted
the same. `columns=name,message_stats.publish` keeps only those fields (dotted: nested ones).

A `use_regex` filter is an RE2 pattern of at most MAX_PATTERN_LENGTH characters compiling to at most
MAX_FILTER_PROGRAM instructions, compiled once per request and silent (RE2 logs nothing): matching it
costs at most a step per instruction and character of each name (W7).
"""

from __future__ import annotations

import math
from typing import Any

import re2
from aiohttp import web

from api.endpoints import parameter
from api.validation import bad
from cluster.security.users import MAX_PATTERN_LENGTH, RE2_OPTIONS

MAX_PAGE_SIZE = 500
DEFAULT_PAGE_SIZE = 100
MAX_FILTER_PROGRAM = 1000
PAGING_QUERY = (
    parameter("page", {"type": "integer", "minimum": 1}),
    parameter("page_size", {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE}),
    parameter("name", {"type": "string"}),
    parameter("use_regex", {"type": "boolean"}),
    parameter("sort", {"type": "string"}),
    parameter("sort_reverse", {"type": "boolean"}),
    parameter("columns", {"type": "string"}),
)
"""The query parameters of a listing (`listed`), as the OpenAPI document gives them."""


def listed(request: web.Request, items: list[dict[str, Any]]) -> Any:
    """`items` filtered, sorted, paged and cut to columns as the request's query asks."""
    query = request.query
    total = len(items)
    chosen = _filtered(items, query.get("name"), query.get("use_regex") == "true")
    sort = query.get("sort")
    if sort:
        reverse = query.get("sort_reverse") == "true"
        chosen.sort(key=lambda item: _sort_key(_field(item, sort)), reverse=reverse)
    columns = [c for c in query.get("columns", "").split(",") if c]
    if "page" not in query:
        return [_columns(item, columns) for item in chosen]
    page = _positive(query, "page", 1)
    size = _positive(query, "page_size", DEFAULT_PAGE_SIZE)
    if size > MAX_PAGE_SIZE:
        raise bad(f"page_size must be <= {MAX_PAGE_SIZE}")
    page_count = max(1, math.ceil(len(chosen) / size))
    if page > page_count:
        raise bad(f"page {page} is past the last, {page_count}")
    items_here = chosen[(page - 1) * size : page * size]
    return {
        "items": [_columns(item, columns) for item in items_here],
        "page": page,
        "page_size": size,
        "page_count": page_count,
        "filtered_count": len(chosen),
        "item_count": len(items_here),
        "total_count": total,
    }


def _filtered(items: list[dict[str, Any]], name: str | None, regex: bool) -> list[dict[str, Any]]:
    if not name:
        return list(items)
    if not regex:
        return [item for item in items if name in str(item.get("name", ""))]
    if len(name) > MAX_PATTERN_LENGTH:
        raise bad(f"name is a regular expression of at most {MAX_PATTERN_LENGTH} characters")
    try:
        pattern = re2.compile(name, options=RE2_OPTIONS)
    except re2.error as exc:
        raise bad(f"name is not a regular expression RE2 compiles: {exc}") from exc
    if pattern.programsize > MAX_FILTER_PROGRAM:
        raise bad(f"name is a regular expression too large (at most {MAX_FILTER_PROGRAM} RE2 instructions)")
    return [item for item in items if pattern.search(str(item.get("name", "")))]


def _field(item: dict[str, Any], path: str) -> Any:
    """A (dotted) field of `item`, None where it has none."""
    value: Any = item
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _sort_key(value: Any) -> tuple[int, Any]:
    """Missing values first, then numbers, then everything else as text."""
    if value is None:
        return (0, 0)
    if isinstance(value, bool | int | float):
        return (1, value)
    return (2, str(value))


def _columns(item: dict[str, Any], columns: list[str]) -> dict[str, Any]:
    """`item` with only `columns` (dotted paths keep their nesting), or whole without any."""
    if not columns:
        return item
    kept: dict[str, Any] = {}
    for column in columns:
        value = _field(item, column)
        if value is None:
            continue
        *parents, last = column.split(".")
        target = kept
        for part in parents:
            target = target.setdefault(part, {})
        target[last] = value
    return kept


def _positive(query: Any, name: str, default: int) -> int:
    text = query.get(name, str(default))
    if not (text.isascii() and text.isdigit() and 0 < len(text) <= 9) or int(text) < 1:
        raise bad(f"{name} must be a positive integer, got {text!r}")
    return int(text)
