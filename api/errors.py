"""The API's error: `ApiError`, and the JSON body every failure is answered with (`api.error_answers` maps
each failure to its status and body)."""

from __future__ import annotations

from aiohttp import web


class ApiError(Exception):
    """An error the API answers with `status` and `{"error": code, "reason": reason, **extra}`."""

    def __init__(self, status: int, code: str, reason: str, **extra: object) -> None:
        super().__init__(reason)
        self.status = status
        self.code = code
        self.reason = reason
        self.extra = extra


def error_json(code: str, reason: str, **extra: object) -> dict[str, object]:
    """The JSON error body of the API contract (extras that are None left out)."""
    return {"error": code, "reason": reason, **{k: v for k, v in extra.items() if v is not None}}


def error_response(status: int, code: str, reason: str, **extra: object) -> web.Response:
    """The JSON error answer of the API contract."""
    return web.json_response(error_json(code, reason, **extra), status=status)
