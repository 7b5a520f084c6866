"""HTTP endpoints for policies (RabbitMQ's `/api/policies`; changes run on the metadata leader)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from api.app_keys import CONFIG, FORMATS, METADATA, METADATA_DOOR
from api.auth import POLICY
from api.errors import ApiError
from api.forwarding import on_meta_leader
from api.validation import bad, check_queue_name, json_object
from cluster.queues.policies import PolicyError, checked_policy
from metadata_state.codec import POLICY_CODEC_VERSION
from metadata_state.records import PolicyRecord
from metadata_state.replies import Created, NotFound


def add_routes(router: web.UrlDispatcher) -> None:
    """Register the policy routes (administrators only: `api/auth.py`)."""
    router.add_get("/api/policies", list_policies)
    router.add_get(POLICY, get_policy)
    router.add_put(POLICY, put_policy)
    router.add_delete(POLICY, delete_policy)


def policy_json(record: PolicyRecord) -> dict[str, Any]:
    """A policy as the API shows it."""
    return {
        "name": record.name,
        "pattern": record.pattern,
        "definition": record.definition,
        "priority": record.priority,
    }


async def list_policies(request: web.Request) -> web.StreamResponse:
    """GET /api/policies: every policy, by name."""
    policies = request.app[METADATA].policies
    return web.json_response([policy_json(policies[name]) for name in sorted(policies)])


async def get_policy(request: web.Request) -> web.StreamResponse:
    """GET /api/policies/{policy}."""
    name = request.match_info["policy"]
    record = request.app[METADATA].policies.get(name)
    if record is None:
        raise ApiError(404, "not_found", f"no policy '{name}'")
    return web.json_response(policy_json(record))


@on_meta_leader
async def put_policy(request: web.Request) -> web.StreamResponse:
    """PUT /api/policies/{policy} `{"pattern", "definition", "priority"}`: 201 created, 204 replaced.
    Matching queues apply it at once (their leaders), and queues declared later too."""
    name = request.match_info["policy"]
    body = await json_object(request)
    unknown = set(body) - {"pattern", "definition", "priority"}
    if unknown:
        raise bad(f"unknown fields {sorted(unknown)}")
    try:
        policy = checked_policy(name, body.get("pattern"), body.get("definition"), body.get("priority", 0))
    except PolicyError as exc:
        raise bad(str(exc)) from exc
    target = policy.definition.get("dead-letter-queue")
    if target is not None:
        check_queue_name(target, request.app[CONFIG].max_queue_name_length)
    _require_policies_read_everywhere(request)
    door = request.app[METADATA_DOOR]
    try:
        reply = await door.set_policy(policy.name, policy.pattern, policy.definition, policy.priority)
    except ValueError as exc:  # a node said it reads an older codec since the check
        raise _upgrade_in_progress() from exc
    return web.Response(status=201 if isinstance(reply, Created) else 204)


@on_meta_leader
async def delete_policy(request: web.Request) -> web.StreamResponse:
    """DELETE /api/policies/{policy}: 204; its queues return to their declared arguments."""
    name = request.match_info["policy"]
    if name not in request.app[METADATA].policies:
        raise ApiError(404, "not_found", f"no policy '{name}'")
    _require_policies_read_everywhere(request)
    try:
        reply = await request.app[METADATA_DOOR].clear_policy(name)
    except ValueError as exc:
        raise _upgrade_in_progress() from exc
    if isinstance(reply, NotFound):
        raise ApiError(404, "not_found", reply.reason)
    return web.Response(status=204)


def _require_policies_read_everywhere(request: web.Request) -> None:
    """409 `upgrade_in_progress` until every node reads the metadata commands of policies (503
    `formats_not_yet_known` while a node has not said what it reads)."""
    request.app[FORMATS].require_metadata(POLICY_CODEC_VERSION, "no policies")


def _upgrade_in_progress() -> ApiError:
    return ApiError(409, "upgrade_in_progress", "a node of the cluster reads no policies yet")
