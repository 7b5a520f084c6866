"""HTTP endpoints for policies and operator policies (RabbitMQ's `/api/policies`, `/api/operator-policies`;
changes run on the metadata leader)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from aiohttp import web
from msgspec import Meta

from api.access import Access
from api.app_keys import CONFIG, FORMATS, METADATA, METADATA_DOOR
from api.endpoints import route
from api.errors import ApiError
from api.forwarding import on_meta_leader
from api.request_bodies import RequestBody, read_body_as
from api.routing_names import vhost_of
from api.validation import bad, check_queue_name
from cluster.queues.policies import OPERATOR_POLICY_KEYS, PolicyError, checked_policy, policy_version
from cluster.routing.exchange_checks import RoutingError, checked_exchange_name
from metadata_state.codec import OPERATOR_POLICY_CODEC_VERSION, POLICY_CODEC_VERSION, VHOST_CODEC_VERSION
from metadata_state.records import PolicyRecord
from metadata_state.replies import Created, NotFound
from metadata_state.vhost_names import DEFAULT_VHOST, qualified

POLICY = "/api/policies/{policy}"
OPERATOR_POLICY = "/api/operator-policies/{policy}"
_LIMIT = {"type": "integer", "minimum": 0}
_KEYS: dict[str, dict[str, Any]] = {
    "dead-letter-queue": {"type": "string", "minLength": 1},
    "dead-letter-strategy": {"enum": ["at-most-once", "at-least-once"]},
    "max-length": _LIMIT,
    "max-length-bytes": _LIMIT,
    "overflow": {"enum": ["drop-head", "reject-publish"]},
    "delivery-limit": {"type": "integer", "minimum": -1},
    "message-ttl": _LIMIT,
    "expires": {"type": "integer", "minimum": 1},
    "lease-period": {"type": "integer", "minimum": 1},
    "consumer-timeout": {"type": "integer", "minimum": 1},
    "delayed-retry-type": {"enum": ["disabled", "all", "failed", "returned"]},
    "delayed-retry-min": _LIMIT,
    "delayed-retry-max": _LIMIT,
    "target-group-size": {"type": "integer", "minimum": 1},
    "max-unacked": {"type": "integer", "minimum": 1},
    "discard-mark": _LIMIT,
    "discard-below-priority": {"type": "integer", "minimum": 0, "maximum": 31},
    "dequeue-interval-ms": {"type": "integer", "minimum": 1},
    "dequeue-window": {
        "type": "string",
        "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]-([01][0-9]|2[0-3]):[0-5][0-9]$",
    },
    "dedupe-window": {"type": "integer", "minimum": 1},
    "dedupe-max": {"type": "integer", "minimum": 1, "maximum": 1_000_000},
    "dead-letter-exchange": {"type": "string", "maxLength": 255},
    "dead-letter-routing-key": {"type": "string", "maxLength": 255},
}
DEFINITION = {
    "minProperties": 1,
    "additionalProperties": False,
    "properties": _KEYS,
    "dependentRequired": {
        "discard-mark": ["discard-below-priority"],
        "discard-below-priority": ["discard-mark"],
    },
    "not": {"required": ["dead-letter-queue", "dead-letter-exchange"]},
}
"""The policy keys and their values, for the OpenAPI document (`checked_policy` checks a definition)."""
OPERATOR_DEFINITION = {
    "minProperties": 1,
    "additionalProperties": False,
    "properties": {key: _KEYS[key] for key in OPERATOR_POLICY_KEYS},
}
"""An operator policy's keys: the limits."""


class Policy(RequestBody):
    """A policy: the definition it gives the queues whose names its pattern matches."""

    pattern: Annotated[
        str, Meta(extra_json_schema={"minLength": 1}, description="RE2, matched anywhere in a queue name")
    ]
    definition: Annotated[dict[str, Any], Meta(extra_json_schema=DEFINITION)]
    priority: Annotated[int, Meta(description="the highest-priority matching policy applies")] = 0


class OperatorPolicy(RequestBody):
    """An operator policy: the limits it sets over the queues whose names its pattern matches."""

    pattern: Annotated[
        str, Meta(extra_json_schema={"minLength": 1}, description="RE2, matched anywhere in a queue name")
    ]
    definition: Annotated[dict[str, Any], Meta(extra_json_schema=OPERATOR_DEFINITION)]
    priority: Annotated[int, Meta(description="the highest-priority matching operator policy applies")] = 0


def policy_json(record: PolicyRecord) -> dict[str, Any]:
    """A policy as the API shows it."""
    return {
        "vhost": record.vhost,
        "name": record.name,
        "pattern": record.pattern,
        "definition": record.definition,
        "priority": record.priority,
    }


@route(
    "GET",
    "/api/policies",
    access=Access.ADMINISTRATOR,
    summary="list policies",
    responses={"200": "policies"},
)
async def list_policies(request: web.Request) -> web.StreamResponse:
    """GET /api/policies: every policy, by name."""
    return _listed(request.app[METADATA].policies)


@route(
    "GET",
    "/api/operator-policies",
    access=Access.ADMINISTRATOR,
    summary="list operator policies",
    responses={"200": "operator policies"},
)
async def list_operator_policies(request: web.Request) -> web.StreamResponse:
    """GET /api/operator-policies: every operator policy, by name."""
    return _listed(request.app[METADATA].operator_policies)


@route(
    "GET",
    POLICY,
    access=Access.ADMINISTRATOR,
    summary="one policy of `/` (or, naming no such policy but a vhost, that vhost's policies)",
    responses={"200": "the policy, or the vhost's policies"},
)
async def get_policy(request: web.Request) -> web.StreamResponse:
    """GET /api/policies/{policy}."""
    return _found(request, request.app[METADATA].policies, "policy")


@route(
    "GET",
    OPERATOR_POLICY,
    access=Access.ADMINISTRATOR,
    summary="one operator policy",
    responses={"200": "the operator policy"},
)
async def get_operator_policy(request: web.Request) -> web.StreamResponse:
    """GET /api/operator-policies/{policy}."""
    return _found(request, request.app[METADATA].operator_policies, "operator policy")


def _listed(policies: Mapping[str, PolicyRecord], vhost: str | None = None) -> web.Response:
    """The policies (of `vhost`, when it names one) by vhost, then name."""
    records = sorted(policies.values(), key=lambda p: (p.vhost != DEFAULT_VHOST, p.vhost, p.name))
    return web.json_response([policy_json(p) for p in records if vhost in (None, p.vhost)])


def _found(request: web.Request, policies: Mapping[str, PolicyRecord], kind: str) -> web.Response:
    """The policy the path names; a one-segment path naming no policy of `/` but a vhost lists that
    vhost's (RabbitMQ's `/api/policies/{vhost}`)."""
    vhost, name = _named(request)
    record = policies.get(qualified(vhost, name))
    if record is not None:
        return web.json_response(policy_json(record))
    if "vhost" not in request.match_info and request.app[METADATA].has_vhost(name):
        return _listed(policies, name)
    raise ApiError(404, "not_found", f"no {kind} '{name}' in vhost '{vhost}'")


def _named(request: web.Request) -> tuple[str, str]:
    """The vhost (`/` for a one-segment path) and the policy name the path names."""
    vhost = request.match_info.get("vhost")
    return (DEFAULT_VHOST if vhost is None else vhost_of(request)), request.match_info["policy"]


@route(
    "PUT",
    POLICY,
    access=Access.ADMINISTRATOR,
    summary="create or replace a policy: matching queues apply it at once, and queues declared later",
    responses={
        "201": "created",
        "204": "replaced",
        "409": "a node reads no policies or not all of its keys yet (upgrade_in_progress)",
    },
    body=Policy,
    about=(
        'RabbitMQ-style policies (administrators): `{"pattern", "definition", "priority"}`; '
        "every queue whose name the RE2 `pattern` matches (anywhere, as in RabbitMQ), now or "
        "declared later, applies the definition of the highest-priority matching policy "
        "(policy keys: `max-length`, `max-length-bytes`, `overflow`, `message-ttl`, "
        "`expires`, `delivery-limit`, `dead-letter-queue` or `dead-letter-exchange` with "
        "`dead-letter-routing-key`, `dead-letter-strategy`, "
        "`lease-period`, `consumer-timeout`, `delayed-retry-type`/`-min`/`-max`, "
        "`target-group-size`, and the backlog controls `max-unacked`, `discard-mark` with "
        "`discard-below-priority`, `dequeue-interval-ms`, `dequeue-window`, and the deduplication "
        "window `dedupe-window`, `dedupe-max`); the queue's own "
        "value wins (its own way of dead-lettering, to a queue or through an exchange, whole), "
        "except for limits (`max-unacked` among them), where the "
        "stricter wins; `GET /api/queues/{q}` shows `policy` and `effective_arguments` "
        '(`quorumq policies set|clear|list`; docs/internals/queue_state.md, "Policies")'
    ),
)
@on_meta_leader
async def put_policy(request: web.Request) -> web.StreamResponse:
    """PUT /api/policies/{policy} `{"pattern", "definition", "priority"}`: 201 created, 204 replaced.
    Matching queues apply it at once (their leaders), and queues declared later too."""
    return await _put(request, operator=False)


@route(
    "PUT",
    OPERATOR_POLICY,
    access=Access.ADMINISTRATOR,
    summary="create or replace an operator policy: its limits apply over every matching queue's own and "
    "its policy's",
    responses={
        "201": "created",
        "204": "replaced",
        "409": "a node reads no operator policies or not all of its keys yet (upgrade_in_progress)",
    },
    body=OperatorPolicy,
    about=(
        'RabbitMQ\'s operator policies (administrators): `{"pattern", "definition", "priority"}` as a '
        "policy's, with the limits only (`max-length`, `max-length-bytes`, `message-ttl`, `expires`, "
        "`delivery-limit`, `max-unacked`); of the highest-priority operator policy matching a queue, each "
        "limit applies over the queue's own argument and its policy's: the smallest of the three is in "
        "force; `GET /api/queues/{q}` shows `operator_policy` and `effective_arguments` "
        '(`quorumq policies set --operator`; docs/internals/cluster.md, "Operator policies")'
    ),
)
@on_meta_leader
async def put_operator_policy(request: web.Request) -> web.StreamResponse:
    """PUT /api/operator-policies/{policy}: 201 created, 204 replaced."""
    return await _put(request, operator=True)


async def _put(request: web.Request, operator: bool) -> web.Response:
    vhost, name = _named(request)
    given: Policy | OperatorPolicy = (
        await read_body_as(request, OperatorPolicy) if operator else await read_body_as(request, Policy)
    )
    try:
        policy = checked_policy(name, given.pattern, given.definition, given.priority, operator)
    except PolicyError as exc:
        raise bad(str(exc)) from exc
    target = policy.definition.get("dead-letter-queue")
    if target is not None:
        check_queue_name(target, request.app[CONFIG].max_queue_name_length)
    exchange = policy.definition.get("dead-letter-exchange")
    if exchange:
        try:
            checked_exchange_name(exchange)
        except RoutingError as exc:
            raise bad(f"definition dead-letter-exchange: {exc}") from exc
    _require_read_everywhere(request, operator, vhost)
    request.app[FORMATS].require_queue_ops(policy_version(policy), "not all of these policy keys")
    door = request.app[METADATA_DOOR]
    try:
        reply = await door.set_policy(
            policy.name, policy.pattern, policy.definition, policy.priority, operator, vhost
        )
    except ValueError as exc:  # a node said it reads an older codec since the check
        raise _upgrade_in_progress() from exc
    return web.Response(status=201 if isinstance(reply, Created) else 204)


@route(
    "DELETE",
    POLICY,
    access=Access.ADMINISTRATOR,
    summary="remove a policy: its queues return to their declared arguments",
    responses={"204": "removed", "409": "a node reads no policies yet (upgrade_in_progress)"},
)
@on_meta_leader
async def delete_policy(request: web.Request) -> web.StreamResponse:
    """DELETE /api/policies/{policy}: 204; its queues return to their declared arguments."""
    return await _delete(request, operator=False)


@route(
    "DELETE",
    OPERATOR_POLICY,
    access=Access.ADMINISTRATOR,
    summary="remove an operator policy: its queues return to their own and their policy's limits",
    responses={
        "204": "removed",
        "404": "no such operator policy",
        "409": "a node reads no operator policies yet (upgrade_in_progress)",
    },
)
@on_meta_leader
async def delete_operator_policy(request: web.Request) -> web.StreamResponse:
    """DELETE /api/operator-policies/{policy}: 204."""
    return await _delete(request, operator=True)


async def _delete(request: web.Request, operator: bool) -> web.Response:
    vhost, name = _named(request)
    metadata = request.app[METADATA]
    if qualified(vhost, name) not in (metadata.operator_policies if operator else metadata.policies):
        kind = "operator policy" if operator else "policy"
        raise ApiError(404, "not_found", f"no {kind} '{name}' in vhost '{vhost}'")
    _require_read_everywhere(request, operator, vhost)
    try:
        reply = await request.app[METADATA_DOOR].clear_policy(name, operator, vhost)
    except ValueError as exc:
        raise _upgrade_in_progress() from exc
    if isinstance(reply, NotFound):
        raise ApiError(404, "not_found", reply.reason)
    return web.Response(status=204)


def _require_read_everywhere(request: web.Request, operator: bool, vhost: str) -> None:
    """409 `upgrade_in_progress` until every node reads the metadata commands of policies (of operator
    policies, with `operator`; of a vhost but `/`'s, with vhosts; 503 `formats_not_yet_known` while a
    node has not said what it reads)."""
    if vhost != DEFAULT_VHOST:
        request.app[FORMATS].require_metadata(VHOST_CODEC_VERSION, "no vhosts")
    elif operator:
        request.app[FORMATS].require_metadata(OPERATOR_POLICY_CODEC_VERSION, "no operator policies")
    else:
        request.app[FORMATS].require_metadata(POLICY_CODEC_VERSION, "no policies")


def _upgrade_in_progress() -> ApiError:
    return ApiError(
        409, "upgrade_in_progress", "a node of the cluster reads no policies (or operator policies) yet"
    )
