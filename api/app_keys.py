"""Typed keys of the values the HTTP application carries (aiohttp's AppKey): the node's parts the app
factory (`api.app.create_app`) hands over, and the application's own."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp import web

if TYPE_CHECKING:
    from api.login_throttle import LoginThrottle
    from api.metrics import Metrics
    from api.password_checker import PasswordChecker
    from api.tokens import RevokedTokens
    from cluster.config import NodeConfig
    from cluster.membership.membership import Membership
    from cluster.metadata.metadata_door import MetadataDoor
    from cluster.metadata.metadata_view import MetadataView
    from cluster.node_status import NodeStatus
    from cluster.queues.queue_directory import QueueDirectory
    from cluster.replication.format_versions import FormatVersions
    from cluster.replication.peer_requests import PeerRequests
    from cluster.resource_alarms import ResourceAlarms
    from cluster.security.peer_auth import NodeCaller
    from cluster.security.replay_guard import ReplayGuard

CONFIG: web.AppKey[NodeConfig] = web.AppKey("config")
QUEUES: web.AppKey[QueueDirectory] = web.AppKey("queues")
METADATA: web.AppKey[MetadataView] = web.AppKey("metadata")
METADATA_DOOR: web.AppKey[MetadataDoor] = web.AppKey("metadata_door")
STATUS: web.AppKey[NodeStatus] = web.AppKey("status")
FORMATS: web.AppKey[FormatVersions] = web.AppKey("formats")
MEMBERSHIP: web.AppKey[Membership] = web.AppKey("membership")
CALLER: web.AppKey[NodeCaller] = web.AppKey("caller")
PEER_REQUESTS: web.AppKey[PeerRequests] = web.AppKey("peer_requests")
METRICS: web.AppKey[Metrics] = web.AppKey("metrics")
ALARMS: web.AppKey[ResourceAlarms] = web.AppKey("alarms")
FORWARD_SESSION = web.AppKey("forward_session", aiohttp.ClientSession)
PASSWORD_CHECKER: web.AppKey[PasswordChecker] = web.AppKey("password_checker")
REPLAY_GUARD: web.AppKey[ReplayGuard] = web.AppKey("replay_guard")
LOGIN_THROTTLE: web.AppKey[LoginThrottle] = web.AppKey("login_throttle")
REVOKED_TOKENS: web.AppKey[RevokedTokens] = web.AppKey("revoked_tokens")  # log-outs, until each expires
STREAMS: web.AppKey[set[web.WebSocketResponse]] = web.AppKey("streams")  # the open streaming connections
WALL_MS: web.AppKey[Callable[[], int]] = web.AppKey("wall_ms")  # the node's wall clock, ms since the epoch
STARTED = web.AppKey("started", float)  # time.monotonic() when the application was made (uptime)
OPENAPI: web.AppKey[dict[str, Any]] = web.AppKey("openapi")  # the document of the routes it serves
