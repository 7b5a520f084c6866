"""Typed keys of the values the HTTP application carries (aiohttp's AppKey)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import aiohttp
from aiohttp import web

if TYPE_CHECKING:
    pass

NODE = web.AppKey["Node"]("node")
METRICS = web.AppKey["Metrics"]("metrics")
FORWARD_SESSION = web.AppKey("forward_session", aiohttp.ClientSession)
PASSWORD_CHECKER = web.AppKey["PasswordChecker"]("password_checker")
REPLAY_GUARD = web.AppKey["ReplayGuard"]("replay_guard")
LOGIN_THROTTLE = web.AppKey["LoginThrottle"]("login_throttle")
