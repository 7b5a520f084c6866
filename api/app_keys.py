"""Typed keys of the values the HTTP application carries (aiohttp's AppKey)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import aiohttp
from aiohttp import web

if TYPE_CHECKING:
    from api.auth import PasswordChecker
    from api.login_throttle import LoginThrottle
    from api.metrics import Metrics
    from cluster.node import Node
    from cluster.replay_guard import ReplayGuard

NODE: web.AppKey[Node] = web.AppKey("node")
METRICS: web.AppKey[Metrics] = web.AppKey("metrics")
FORWARD_SESSION = web.AppKey("forward_session", aiohttp.ClientSession)
PASSWORD_CHECKER: web.AppKey[PasswordChecker] = web.AppKey("password_checker")
REPLAY_GUARD: web.AppKey[ReplayGuard] = web.AppKey("replay_guard")
LOGIN_THROTTLE: web.AppKey[LoginThrottle] = web.AppKey("login_throttle")
