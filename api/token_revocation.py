"""DELETE /api/tokens: revoke the bearer token the request carries (the management UI's log-out).

Tokens are stateless (api/tokens.py), so each node keeps the tokens revoked on it, in memory until they
expire. The node asked revokes the token, then tells every other member it reaches with the same request
and the token itself as credentials (only its holder can revoke it), with `scope=node` so that each
revokes it only there. A member down at that moment, or one restarted since, accepts the token until it
expires (decision 0020).
"""

from __future__ import annotations

import asyncio
import logging

import aiohttp
from aiohttp import web

from api.access import Access
from api.app_keys import FORWARD_SESSION, METADATA, REVOKED_TOKENS, STATUS
from api.auth import principal
from api.endpoints import parameter, route
from api.errors import ApiError
from api.tokens import RevocationsFull

log = logging.getLogger(__name__)
ONLY_HERE = "node"


@route(
    "DELETE",
    "/api/tokens",
    access=Access.AUTHENTICATED,  # the caller's own bearer token
    summary="revoke the bearer token presented (log out): here, and on every member reached",
    responses={"200": "the nodes that revoked it"},
    query=(parameter("scope", {"type": "string", "enum": [ONLY_HERE]}),),
)
async def revoke_token(request: web.Request) -> web.StreamResponse:
    """DELETE /api/tokens[?scope=node]: 200 `{"revoked_on": [NODE, ...]}`, the members that will refuse
    the token from now on; 400 for credentials that are no bearer token."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    expires_ms = principal(request).expires_ms
    if scheme.lower() != "bearer" or expires_ms is None:
        raise ApiError(400, "bad_request", "only a bearer token can be revoked")
    try:
        request.app[REVOKED_TOKENS].revoke(token.strip(), expires_ms)
    except RevocationsFull as exc:
        raise ApiError(503, "too_many_revocations", str(exc)) from exc
    status = request.app[STATUS]
    revoked_on = [status.name]
    if request.query.get("scope") != ONLY_HERE:
        others = sorted(name for name in request.app[METADATA].nodes if name != status.name)
        told = await asyncio.gather(*(_tell(request, name) for name in others))
        revoked_on += [name for name, done in zip(others, told, strict=True) if done]
    return web.json_response({"revoked_on": revoked_on})


async def _tell(request: web.Request, name: str) -> bool:
    """Whether member `name` revoked the token too."""
    url = request.app[STATUS].node_http(name)
    if url is None:
        return False
    headers = {"Authorization": request.headers["Authorization"]}
    try:
        async with request.app[FORWARD_SESSION].delete(
            f"{url}/api/tokens", params={"scope": ONLY_HERE}, headers=headers
        ) as answer:
            return answer.status == 200
    except (aiohttp.ClientError, TimeoutError) as exc:
        log.info("token not revoked on %s: %s", name, exc)
        return False
