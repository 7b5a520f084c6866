"""Reading single option values of format("quorumq"): required strings, positive integers, times."""

from __future__ import annotations

from collections.abc import Mapping

from quorumq.moments import epoch_ms


class OptionError(ValueError):
    """A missing or malformed option of the quorumq data source."""


def required(options: Mapping[str, str], name: str) -> str:
    value = options.get(name)
    if not value:
        raise OptionError(f"option '{name}' is required for format('quorumq')")
    return value


def positive(options: Mapping[str, str], name: str, default: int | None) -> int | None:
    """An integer >= 1, or `default` when the option is absent."""
    raw = options.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise OptionError(f"option '{name}' must be an integer, got {raw!r}") from exc
    if value < 1:
        raise OptionError(f"option '{name}' must be >= 1, got {value}")
    return value


def one_of(options: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    """One of `choices` (the first is the default)."""
    value = options.get(name) or choices[0]
    if value not in choices:
        raise OptionError(f"option '{name}' must be one of {', '.join(choices)}, got {value!r}")
    return value


def moment(options: Mapping[str, str], name: str) -> int | None:
    """Epoch milliseconds from digits or an ISO-8601 time (without a zone: UTC); None when absent."""
    raw = options.get(name)
    if not raw:
        return None
    try:
        return epoch_ms(int(raw) if raw.isdigit() else raw)
    except ValueError as exc:
        expected = "epoch milliseconds or an ISO-8601 time"
        raise OptionError(f"option '{name}' must be {expected}, got {raw!r}") from exc
