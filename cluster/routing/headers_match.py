"""Headers bindings, matched as RabbitMQ matches them: a binding's arguments name headers and values,
and its `x-match` says how many must match: `all` (the default) or `any`; arguments whose name starts
with `x-` take no part, unless `x-match` is `all-with-x` or `any-with-x` (`x-match` itself and the
content filter `x-filter` never do). An argument with no value (None) asks only that the header be
there."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster.routing.content_filter import FILTER

MATCH = "x-match"
KINDS = ("all", "any", "all-with-x", "any-with-x")


class BadHeadersBinding(ValueError):
    """A headers binding's `x-match` is none of KINDS."""


def headers_match(binding: Mapping[str, Any], headers: Mapping[str, Any]) -> bool:
    """Whether a message with `headers` matches a headers binding with arguments `binding`. A binding
    with no argument to test matches with `all` and not with `any`, as in RabbitMQ."""
    kind = binding.get(MATCH, "all")
    if kind not in KINDS:
        raise BadHeadersBinding(f"x-match must be one of {', '.join(KINDS)}, got {kind!r}")
    results = (
        name in headers and (value is None or _same(headers[name], value)) for name, value in tested(binding)
    )
    return all(results) if kind.startswith("all") else any(results)


def tested(binding: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The arguments of a headers binding that test headers, as (name, value), by its `x-match`."""
    with_x = str(binding.get(MATCH, "all")).endswith("-with-x")
    return [
        (name, value)
        for name, value in binding.items()
        if name not in (MATCH, FILTER) and (with_x or not name.startswith("x-"))
    ]


def _same(got: Any, wanted: Any) -> bool:
    """Equal values of the same kind (1 is not True, 1 is not 1.0), as AMQP's typed field tables tell."""
    return type(got) is type(wanted) and got == wanted
