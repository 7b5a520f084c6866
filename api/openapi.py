"""The OpenAPI 3 description of the whole HTTP API, served at `/api/openapi.json`.

`tests/security/test_openapi.py` compares its paths and methods with the routes the server registers,
so the two cannot drift apart silently. Request schemas describe what handlers accept; the fuzzer
generates valid and invalid requests from them.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from api.deliveries import DEFAULT_MAX_BYTES, MAX_MAX_BYTES
from cluster.queues.queue_limits import INT64_MAX

JSON = "application/json"
MSGPACK = "application/msgpack"
Schema = dict[str, Any]

QUEUE_NAME: Schema = {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._:\\-]{0,254}$"}
USER_NAME: Schema = {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._@\\-]{0,63}$"}
ERROR: Schema = {
    "type": "object",
    "required": ["error", "reason"],
    "properties": {
        "error": {"type": "string"},
        "reason": {"type": "string"},
        "leader": {"type": ["string", "null"]},
        "leader_http": {"type": ["string", "null"]},
    },
}
UNAVAILABLE = (
    "no leader or quorum yet (retry, on `leader_http` when given); with error `outcome_unknown` the "
    "request was sent on (to the leader, or into the Raft log) and lost track of: it may have taken "
    "effect, so only a request safe to repeat (a read, a deduplicated publish) should be retried; with "
    "error `formats_not_yet_known` (and `Retry-After`) the request needs a format version not every node "
    "has said it reads yet (retry); with error `resource_alarm` (and `Retry-After`, the body naming "
    "`node` and `resource`) a publish was held back because a node holding a replica of the queue is "
    "in a disk or memory alarm (retry once consumers drained or space was freed)"
)
INT64: Schema = {"type": "integer", "minimum": 0, "maximum": INT64_MAX}
IDS: Schema = {"type": "array", "minItems": 1, "items": INT64}
MESSAGE: Schema = {
    "type": "object",
    "required": ["body"],
    "additionalProperties": False,
    "properties": {
        "body": {"type": "string"},
        "encoding": {"enum": ["utf8", "base64"]},
        "headers": {"type": "object"},
        "expiration": INT64,
        "delay": {**INT64, "description": "ms the message waits in the queue before it is ready"},
        "not_before": {
            "description": "the time it is ready from (epoch ms or ISO-8601), instead of delay",
            "type": ["integer", "string"],
        },
        "priority": {
            "type": "integer",
            "minimum": 0,
            "maximum": 255,
            "description": "higher levels are served first; above the queue's top (31, or x-max-priority) "
            "taken as the top",
        },
    },
}
PACKED_MESSAGE: Schema = {
    **MESSAGE,
    "properties": {
        **MESSAGE["properties"],
        "body": {
            "type": "string",
            "description": "bin: the raw body, stored as binary (JSON readers get base64); "
            "str: as in JSON (text, or base64 text with encoding base64)",
        },
    },
}
DELIVERY: Schema = {
    "type": "object",
    "required": [
        "id",
        "body",
        "encoding",
        "headers",
        "delivery_count",
        "redelivered",
        "acquired_count",
        "published_at",
    ],
    "properties": {
        "id": {"type": "integer", "minimum": 0},
        "body": {"type": "string"},
        "encoding": {"enum": ["utf8", "base64"]},
        "headers": {"type": "object"},
        "delivery_count": {
            "type": "integer",
            "minimum": 0,
            "description": "failed deliveries before this one",
        },
        "redelivered": {"type": "boolean", "description": "handed out before (acquired_count > 0)"},
        "acquired_count": {"type": "integer", "minimum": 0, "description": "hand-outs before this one"},
        "published_at": {"type": "integer", "description": "enqueue time, ms since the epoch"},
        "seq": {"type": "integer", "description": "a durable consumer's delivery sequence number"},
        "priority": {"type": "integer", "minimum": 1, "description": "the message's level; absent for 0"},
    },
}
PACKED_DELIVERY: Schema = {
    **DELIVERY,
    "properties": {
        **DELIVERY["properties"],
        "body": {"type": "string", "description": "bin: the raw body, whatever it was published as"},
        "encoding": {"enum": ["utf8", "base64"], "description": "how it was published: text or binary"},
    },
}
DELIVERIES = {
    JSON: {"schema": {"type": "array", "items": DELIVERY}},
    MSGPACK: {"schema": {"type": "array", "items": PACKED_DELIVERY}},
}
ONE_DELIVERY = {JSON: {"schema": DELIVERY}, MSGPACK: {"schema": PACKED_DELIVERY}}
WIRE_FORMATS = (
    "Publishes may also be sent as msgpack (`Content-Type: application/msgpack`, the same map with each "
    "body as bin), and deliveries are answered in msgpack on `Accept: application/msgpack`, bodies as "
    "bin: base64 inside JSON costs a third more bytes and an encode and decode per message."
)
POLICY_NAME: Schema = {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._:@\\-]{0,127}$"}
_LIMIT: Schema = {"type": "integer", "minimum": 0}
POLICY: Schema = {
    "type": "object",
    "required": ["pattern", "definition"],
    "additionalProperties": False,
    "properties": {
        "pattern": {"type": "string", "minLength": 1, "description": "RE2, matched anywhere in a queue name"},
        "priority": {"type": "integer", "default": 0},
        "definition": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": False,
            "properties": {
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
            },
        },
    },
}
PERMISSIONS: Schema = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"configure": {"type": "string"}, "write": {"type": "string"}, "read": {"type": "string"}},
}


def _object(properties: dict[str, Schema], required: tuple[str, ...] = ()) -> Schema:
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": properties,
        **({"required": list(required)} if required else {}),
    }


def _path_param(name: str, schema: Schema) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema}


def _query(name: str, schema: Schema) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema}


def _operation(
    summary: str,
    ok: dict[str, str],
    *,
    body: Schema | None = None,
    body_required: bool = True,
    query: tuple[dict[str, Any], ...] = (),
    public: bool = False,
    packed_body: Schema | None = None,
    answers: dict[str, Any] | None = None,
    about: str = "",
) -> dict[str, Any]:
    """An operation; `packed_body` is the msgpack form of `body`, `answers` the content of its 200 answer,
    `about` its description (Markdown, shown in docs/use/http-api.md)."""
    responses: dict[str, Any] = {status: {"description": text} for status, text in ok.items()}
    if answers is not None:
        responses["200"]["content"] = answers
    errors = {
        "400": "bad input",
        "404": "unknown resource",
        "421": "a Host this node does not go by",
        "503": UNAVAILABLE,
    }
    if not public:
        errors |= {"401": "missing or wrong credentials", "403": "not permitted"}
    for status, text in errors.items():
        responses.setdefault(status, {"description": text, "content": {JSON: {"schema": ERROR}}})
    operation: dict[str, Any] = {"summary": summary, "responses": responses}
    if about:
        operation["description"] = about
    if public:
        operation["security"] = []
    if body is not None:
        responses.setdefault(
            "415", {"description": "a body neither JSON nor msgpack", "content": {JSON: {"schema": ERROR}}}
        )
        content = {JSON: {"schema": body}} | ({MSGPACK: {"schema": packed_body}} if packed_body else {})
        operation["requestBody"] = {"required": body_required, "content": content}
    if query:
        operation["parameters"] = list(query)
    return operation


Q = "/api/queues/{q}"
C = Q + "/consumers/{tag}"
SETTLE = _object(
    {
        "ids": IDS,
        "requeue": {
            "type": "boolean",
            "description": "nack only: back to the queue (default) or dead-lettered",
        },
        "failed": {
            "type": "boolean",
            "description": "nack with requeue: counts toward x-delivery-limit (default); false does not",
        },
        "reason": {
            "type": "string",
            "maxLength": 256,
            "description": "nack without requeue: kept as reason-text in the dead letter's x-death",
        },
        "delay": {
            "type": "integer",
            "minimum": 0,
            "description": "nack with requeue: ms the messages wait before they are ready again (0: at "
            "once, whatever the queue's x-delayed-retry-*)",
        },
    },
    ("ids",),
)
TOUCH = _object({"ids": IDS}, ("ids",))
REDRIVE: Schema = _object(
    {
        "task": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._:@\\-]{0,127}$"},
        "to": QUEUE_NAME,
        "since": {"type": ["integer", "string"], "description": "epoch ms or ISO-8601"},
        "until": {"type": ["integer", "string"], "description": "epoch ms or ISO-8601"},
        "rate": {"type": "integer", "minimum": 1},
    }
)
ENDED = "the consumer was ended by its leader (error consumer_timeout or consumer_idle)"
DECLARE = _object({"arguments": {"type": "object"}})


def _publish(message: Schema) -> Schema:
    return _object(
        {
            "messages": {"type": "array", "minItems": 1, "items": message},
            "publisher": {"type": "string"},
            "seq": INT64,
        },
        ("messages",),
    )


PUBLISH = _publish(MESSAGE)
PACKED_PUBLISH = _publish(PACKED_MESSAGE)
SINCE = {
    "description": "read only messages enqueued at or after this time",
    "oneOf": [{"type": "integer", "minimum": 0}, {"type": "string", "format": "date-time"}],
}
CONSUMER = {
    "type": "object",
    "properties": {
        "prefetch": {"type": "integer", "minimum": 1, "maximum": 65535},
        "priority": {"type": "integer"},
        "timeout": {
            "type": "integer",
            "minimum": 1,
            "description": "the consumer timeout (ms): a delivery held this long without an ack, nack or "
            "touch ends the consumer (default: the queue's x-consumer-timeout, else the node's)",
        },
        "durable": {"type": "boolean"},
        "name": {"type": "string"},
        "since": SINCE,
        "auto_ack": {
            "type": "boolean",
            "description": "AMQP's no-ack: each poll's deliveries are settled as they are handed out "
            "(never with durable)",
        },
    },
}

MAX_BYTES = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_MAX_BYTES,
    "description": f"the answer's byte budget: its messages' bodies add up to at most this (the first "
    f"always), {DEFAULT_MAX_BYTES} when not given",
}
POLL_QUERY = (
    _query("max", {"type": "integer", "minimum": 0, "maximum": 10000}),
    _query("wait", {"type": "number", "minimum": 0, "maximum": 60}),
    _query("max_bytes", MAX_BYTES),
)
PAGING_QUERY = (
    _query("page", {"type": "integer", "minimum": 1}),
    _query("page_size", {"type": "integer", "minimum": 1, "maximum": 500}),
    _query("name", {"type": "string"}),
    _query("use_regex", {"type": "boolean"}),
    _query("sort", {"type": "string"}),
    _query("sort_reverse", {"type": "boolean"}),
    _query("columns", {"type": "string"}),
)
QUEUES_QUERY = (*PAGING_QUERY, _query("local", {"type": "boolean"}), _query("led", {"type": "boolean"}))
LIST_QUEUES = (
    "every queue with statistics, as its leader counts them (local=true: as this node's replicas do;"
    " led=true: only the queues this node leads); with page, RabbitMQ's page object; name (use_regex),"
    " sort, sort_reverse, columns as RabbitMQ's"
)
GROUP_IDS: Schema = {"type": "array", "items": {"type": "string"}}
DAMAGE: Schema = {
    "description": "a damaged database this node set aside (decision 0011); null when none was found",
    "type": ["object", "null"],
    "required": ["reason", "found_ms", "moved_to", "repairing"],
    "properties": {
        "reason": {"type": "string", "description": "what was found damaged (RocksDB's Corruption, ...)"},
        "found_ms": {"type": "integer", "description": "when, in ms since the epoch"},
        "moved_to": {"type": "string", "description": "where the damaged copy is kept (DATA_DIR/damaged-N)"},
        "repairing": {
            "type": "boolean",
            "description": "true until every group of this node holds it as a voter of its new incarnation",
        },
    },
}
FORMAT: Schema = {
    "type": "object",
    "required": ["reads", "writes"],
    "properties": {
        "reads": {"type": "integer", "description": "the newest version this node reads"},
        "writes": {
            "type": "integer",
            "description": "the version it writes: its newest once every other node of the cluster reads it",
        },
    },
}
FORMATS: Schema = {
    "description": (
        "which version of each replicated format this node reads and writes (docs/internals/cluster.md)"
    ),
    "type": "object",
    "required": ["queue_operations", "metadata"],
    "properties": {"queue_operations": FORMAT, "metadata": FORMAT},
}
STORE_CHECK: Schema = {
    "description": "the read of the whole database a node makes once after it starts (decision 0016)",
    "type": "object",
    "required": ["done", "checked_bytes"],
    "properties": {
        "done": {"type": "boolean", "description": "true once every key and value was read without damage"},
        "checked_bytes": {"type": "integer", "description": "bytes of keys and values read so far"},
    },
}
HEALTH: Schema = {
    "type": "object",
    "required": ["node", "status", "metadata_leader", "groups_hosted", "groups_led", "damage", "store_check"],
    "properties": {
        "node": {"type": "string"},
        "status": {"enum": ["ok", "no_quorum", "initialising", "halted"]},
        "metadata_leader": {"type": ["string", "null"]},
        "groups_hosted": {"type": "integer"},
        "groups_led": {"type": "integer"},
        "groups_without_leader": GROUP_IDS,
        "groups_repairing": GROUP_IDS,
        "groups_halted": {
            "type": "array",
            "description": "groups whose replica here cannot read the committed entry at index: halted there",
            "items": {
                "type": "object",
                "required": ["group", "index", "reason"],
                "properties": {
                    "group": {"type": "string"},
                    "index": {"type": "integer"},
                    "reason": {"type": "string"},
                },
            },
        },
        "queues": {"type": "integer"},
        "damage": DAMAGE,
        "store_check": STORE_CHECK,
        "formats": FORMATS,
    },
}


def _health() -> dict[str, Any]:
    """GET /api/health: the same report with 200 (ready) and 503 (not ready)."""
    answers = {JSON: {"schema": HEALTH}}
    operation = _operation(
        "node health",
        {"200": "ready", "503": "not ready"},
        public=True,
        answers=answers,
        about=(
            "the node's health report, with `damage` when the node set a damaged database aside, and "
            "`formats`: the version of each replicated format it reads and writes"
        ),
    )
    operation["responses"]["503"]["content"] = answers
    return operation


PATHS: dict[str, dict[str, Any]] = {
    "/api/health": {"get": _health()},
    "/api/health/checks/alarms": {
        "get": _operation(
            "resource alarms (RabbitMQ's health check)",
            {"200": "no node in alarm", "503": "a node in alarm"},
            about=(
                '200 `{"status": "ok"}` when no node this one knows of is in a disk or memory alarm, '
                'else 503 with `alarms`: `[{"node", "resource"}]`; credentials as for `/metrics` (none '
                "with `metrics_public`)"
            ),
        )
    },
    "/metrics": {"get": _operation("Prometheus metrics", {"200": "text exposition format"})},
    "/api/openapi.json": {"get": _operation("this document", {"200": "the OpenAPI document"})},
    "/api/whoami": {"get": _operation("the caller's name, tags and permissions", {"200": "the caller"})},
    "/api/tokens": {
        "post": _operation(
            "issue a bearer token",
            {"201": "token and expiry"},
            body=_object({"ttl_s": {"type": "integer", "minimum": 1, "maximum": 604800}}),
            body_required=False,
        ),
        "delete": _operation(
            "revoke the bearer token presented (log out): here, and on every member reached",
            {"200": "the nodes that revoked it"},
            query=(_query("scope", {"type": "string", "enum": ["node"]}),),
        ),
    },
    "/api/users": {"get": _operation("list users", {"200": "users"})},
    "/api/users/{user}": {
        "get": _operation("one user", {"200": "the user"}),
        "put": _operation(
            "create or update a user",
            {"201": "created", "204": "updated", "409": "reserved name or last administrator"},
            body=_object(
                {"password": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}
            ),
        ),
        "delete": _operation(
            "delete a user", {"204": "deleted", "409": "yourself or the last administrator"}
        ),
    },
    "/api/users/{user}/permissions": {
        "put": _operation("set a user's configure/write/read regexes", {"204": "set"}, body=PERMISSIONS)
    },
    "/api/policies": {"get": _operation("list policies", {"200": "policies"})},
    "/api/policies/{policy}": {
        "get": _operation("one policy", {"200": "the policy"}),
        "put": _operation(
            "create or replace a policy: matching queues apply it at once, and queues declared later",
            {
                "201": "created",
                "204": "replaced",
                "409": "a node reads no policies yet (upgrade_in_progress)",
            },
            body=POLICY,
            about=(
                'RabbitMQ-style policies (administrators): `{"pattern", "definition", "priority"}`; '
                "every queue whose name the RE2 `pattern` matches (anywhere, as in RabbitMQ), now or "
                "declared later, applies the definition of the highest-priority matching policy "
                "(policy keys: `max-length`, `max-length-bytes`, `overflow`, `message-ttl`, "
                "`expires`, `delivery-limit`, `dead-letter-queue`, `dead-letter-strategy`, "
                "`lease-period`, `consumer-timeout`, `delayed-retry-type`/`-min`/`-max`, "
                "`target-group-size`); the queue's own value wins, except for limits, where the "
                "stricter wins; `GET /api/queues/{q}` shows `policy` and `effective_arguments` "
                '(`quorumq policies set|clear|list`; docs/internals/queue_state.md, "Policies")'
            ),
        ),
        "delete": _operation(
            "remove a policy: its queues return to their declared arguments",
            {"204": "removed", "409": "a node reads no policies yet (upgrade_in_progress)"},
        ),
    },
    "/api/queues": {"get": _operation(LIST_QUEUES, {"200": "queues, or a page of them"}, query=QUEUES_QUERY)},
    "/api/queues/%2F": {
        "get": _operation(
            LIST_QUEUES + " (RabbitMQ's path: %2F, the only vhost)", {"200": "queues"}, query=QUEUES_QUERY
        )
    },
    "/api/queues/%2F/{q}": {
        "get": _operation("one queue (RabbitMQ's path, as GET /api/queues/{q})", {"200": "queue"})
    },
    "/api/overview": {
        "get": _operation(
            "RabbitMQ's overview: message counts and rates (publish, deliver_get, ack, redeliver), queue and"
            " object totals, listeners",
            {"200": "overview"},
            about=(
                "RabbitMQ's management API as monitoring tools read it: message counts and rates "
                "(`message_stats`: `publish`, `deliver_get`, `ack`, `redeliver`, each with "
                "`*_details.rate`), queue and object totals, RabbitMQ's queue fields and page objects "
                "(docs/use/management-api.md); `?local=true` lists this "
                "node's own replicas' view"
            ),
        )
    },
    Q + "/redrive": {
        "post": _operation(
            "start a redrive task: move the dead-letter queue's messages (those there now, or enqueued from"
            " since to until) to a queue, or each to the queue its x-death names (administrators), at most"
            " rate a second; the same task again answers it",
            {"201": "the task", "409": "another task runs (redrive_running), or upgrade_in_progress"},
            body=REDRIVE,
            body_required=False,
            about=(
                "dead-letter redrive (SQS's message move task): move the messages there now (or "
                "enqueued from `since` to `until`) to `to`, or each to the queue its `x-death` names, "
                "at most `rate` a second; resumed by a new leader, each message moved once; `quorumq "
                "redrive DLQ [--to Q] [--since T] [--rate N]` with a progress bar "
                '(docs/internals/dead_lettering.md, "Redrive")'
            ),
        ),
        "get": _operation("the queue's redrive tasks with their progress", {"200": "tasks"}),
    },
    Q + "/redrive/{task}": {
        "delete": _operation("cancel a redrive task: what it holds goes back to the queue", {"204": "ended"})
    },
    Q: {
        "put": _operation(
            "declare a queue",
            {"201": "created", "204": "exists with these arguments", "409": "exists with other arguments"},
            body=DECLARE,
            body_required=False,
            about=(
                'declare (`{"arguments": {...}}`): 201 created, 204 same, 409 different, 400 bad argument'
            ),
        ),
        "get": _operation(
            "a queue's statistics",
            {"200": "the queue"},
            about=(
                "definition and stats (`messages`, `messages_ready`, `messages_ready_by_priority`, "
                "`messages_delayed`, `messages_unacknowledged`, `message_bytes`, `consumers`, "
                "`leader`, `members`, `online`, `dead_lettered`)"
            ),
        ),
        "patch": _operation(
            "change runtime arguments",
            {"200": "the queue"},
            body=DECLARE,
            about=(
                "change arguments at runtime like a policy (dead-letter target/strategy, limits, "
                "TTLs, `x-consumer-timeout`, `x-delayed-retry-type`/`-min`/`-max`: returns wait `min "
                "* 2^(n-1)` ms, capped at max, before they are ready again)"
            ),
        ),
        "delete": _operation(
            "delete a queue",
            {"204": "deleted", "409": "not empty or not unused"},
            query=(_query("if_empty", {"type": "boolean"}), _query("if_unused", {"type": "boolean"})),
            about=(
                "delete: 204; the guards are checked by the queue's leader in the queue's log (409 "
                "when it holds messages / has consumers); once they pass, the queue refuses publishes "
                "and new consumers (409 `queue_deleting`) until it is gone"
            ),
        ),
    },
    Q + "/contents": {
        "delete": _operation(
            "purge ready messages", {"200": "count purged"}, about="purge ready and delayed messages"
        )
    },
    Q + "/messages": {
        "post": _operation(
            "publish with confirms",
            {
                "201": "ids",
                "409": "seq_too_old (seq below the dedup window, status unknown) or queue_deleting",
                "413": "too large",
                "422": "too many headers",
                "507": "queue full",
            },
            body=PUBLISH,
            packed_body=PACKED_PUBLISH,
            about=(
                'publish (each message `{"body", "encoding", "headers", "expiration", "delay" or '
                '"not_before", "priority"}`: a delayed message waits in the queue, counted in '
                "`messages_delayed`, then takes its FIFO place by id; `priority` 0-255, served "
                "strictly highest first, above the queue's top (31, or `x-max-priority`) taken as the "
                'top); 201 `{"ids"}` after majority commit; same `publisher`+`seq` again answers the '
                'same ids (`"duplicate": true`; `"ids": []` once forgotten, past 1024 later seqs); '
                "409 `seq_too_old` (nothing enqueued) for a seq below that window not known to have "
                "been enqueued; 409 `queue_deleting` while a guarded delete removes the queue; 507 "
                "when a `reject-publish` queue is full; 413 over the size limits (the body's "
                "`max_request_bytes`, and the replicated operation's 64 MiB less 64 KiB: "
                'docs/operate/security.md "Limits"); 503 `resource_alarm` while a node holding a '
                "replica of the queue is in a disk or memory alarm (docs/operate/operations.md "
                '"Resource alarms")'
            ),
        ),
        "get": _operation(
            "browse: the messages the queue holds (ready or checked out) by id, without consuming them",
            {"200": "deliveries, lowest id first"},
            answers=DELIVERIES,
            query=(
                _query("from", {"type": "integer", "minimum": 0}),
                _query("to", {"type": "integer", "minimum": 0}),
                _query("limit", {"type": "integer", "minimum": 0, "maximum": 10000}),
                _query("max_bytes", MAX_BYTES),
            ),
            about=(
                "browse (within `max_bytes` of bodies, as a poll): the messages a queue holds (ready "
                "or checked out) by id, consuming nothing (Spark batch reads of a dead-letter queue)"
            ),
        ),
    },
    Q + "/messages/peek": {
        "get": _operation(
            "peek: the ready message at a 1-based position in delivery order, without consuming it",
            {"200": "one delivery", "404": "no_message: fewer ready messages than the position"},
            answers=ONE_DELIVERY,
            query=({**_query("position", {"type": "integer", "minimum": 1}), "required": True},),
            about=(
                "peek: the ready message at 1-based position N in delivery order, as one delivery, "
                "consuming nothing; 404 `no_message` past the last (`quorumq-queues peek Q N`, "
                "`client.peek(q, n)`)"
            ),
        )
    },
    Q + "/get": {
        "post": _operation(
            "basic.get",
            {"200": "deliveries"},
            answers=DELIVERIES,
            body=_object(
                {
                    "count": {"type": "integer", "minimum": 1},
                    "ack": {"enum": ["manual", "auto"]},
                    "since": SINCE,
                    "max_bytes": MAX_BYTES,
                }
            ),
            body_required=False,
            about=(
                'one-shot get (`"ack": "manual"/"auto"`, `"max_bytes"` of bodies as for a poll: an '
                "auto-ack get takes only what it answers) and settling or touching what it returned "
                "read only messages enqueued at or after a time (epoch ms or ISO-8601): dead-letter "
                "queues read the Logstash way"
            ),
        )
    },
    Q + "/ack": {"post": _operation("settle got messages", {"200": "settled"}, body=SETTLE)},
    Q + "/nack": {"post": _operation("return or discard got messages", {"200": "returned"}, body=SETTLE)},
    Q + "/touch": {
        "post": _operation(
            "extend the hold of got messages: each counts from now as just handed out",
            {"200": "touched, with hold_ms", "409": "a node reads no touches yet (upgrade_in_progress)"},
            body=TOUCH,
        )
    },
    Q + "/consumers": {
        "get": _operation(
            "the queue's consumers: tag (its first 8 characters; a durable consumer's whole name), prefetch,"
            " priority, active, unacknowledged, timeout_ms, since_ms, auto_ack, durable",
            {"200": "consumers"},
            about=(
                "the queue's consumers (read permission): prefetch, priority, active, unacknowledged, "
                "timeouts, `auto_ack`, durable; a tag shown by its first 8 characters only; a "
                "consumer answers only the user who registered it (and administrators: "
                "docs/operate/security.md)"
            ),
        ),
        "post": _operation(
            "register a consumer",
            {"201": "consumer tag", "409": "the queue is being deleted", "429": "too many consumers"},
            body=CONSUMER,
            body_required=False,
            about=(
                '`{"prefetch", "priority", "timeout", "auto_ack"}` -> 201 `{"consumer": tag, '
                "\"hold_ms\"}`; `timeout` is the consumer's own consumer timeout (ms; else the queue's "
                "`x-consumer-timeout`, else the node's, 30 minutes): a delivery it holds that long "
                "without an ack, nack or touch ends it, and its next request answers 410 "
                '`consumer_timeout` (docs/internals/queue_state.md, "Holding"); a consumer not heard '
                "from (no poll, ack, nack or touch) for the node's idle timeout (60 s) ends too, what "
                "it holds returning as plain returns (410 `consumer_idle`: its lease, "
                'docs/internals/cluster.md, "Holders"), so `hold_ms` is the shortest of the three; '
                '`"auto_ack": true` is AMQP\'s no-ack: what each poll answers is settled before it is '
                "answered (at most once; needs every node at queue operations version 9)"
            ),
        ),
    },
    C: {
        "delete": _operation(
            "cancel a consumer",
            {"204": "cancelled"},
            about="cancel; unacked messages return (a plain return: acquired count + 1)",
        )
    },
    C + "/deliveries": {
        "post": _operation(
            "long-poll deliveries (a POST: it changes what the consumer holds)",
            {"200": "deliveries", "410": ENDED},
            answers=DELIVERIES,
            query=POLL_QUERY,
            about=(
                "long-poll deliveries (`GET` still answers, for older clients); at most `max_bytes` "
                "of bodies (8 MiB by default, up to 64 MiB; the first message always), the rest with "
                "the next poll"
            ),
        ),
        "get": _operation(
            "long-poll deliveries (kept for older clients; as the POST)",
            {"200": "deliveries", "410": ENDED},
            answers=DELIVERIES,
            query=POLL_QUERY,
        ),
    },
    C + "/ack": {"post": _operation("settle deliveries", {"200": "settled", "410": ENDED}, body=SETTLE)},
    C + "/nack": {
        "post": _operation(
            "return or discard deliveries",
            {"200": "returned", "410": ENDED},
            body=SETTLE,
            about=(
                'settle / return (`"failed": false`: a plain return, not counted toward '
                '`x-delivery-limit`; `"delay": ms`: it waits that long before it is ready again; '
                '`"requeue": false` discards or dead-letters, with an optional `"reason"` kept in '
                "`x-death` as `reason-text`)"
            ),
        )
    },
    C + "/touch": {
        "post": _operation(
            "extend the hold of deliveries: each counts from now as just handed out",
            {
                "200": "touched, with hold_ms",
                "409": "a node reads no touches yet (upgrade_in_progress)",
                "410": ENDED,
            },
            body=TOUCH,
            about=(
                '`{"ids"}`: lease extension for slow work; each id counts from now as just handed out '
                '-> 200 `{"hold_ms"}` (the client\'s `message.process()` does it every half hold)'
            ),
        )
    },
    C + "/checkout": {
        "post": _operation(
            "durable consumer: number more messages (since a time, within a byte budget)",
            {"200": "sequence position"},
            body=_object(
                {
                    "max": {"type": "integer", "minimum": 0, "maximum": 10000},
                    "since": SINCE,
                    "max_bytes": {"type": "integer", "minimum": 1},
                }
            ),
            body_required=False,
            about="durable consumers with a delivery sequence (the Spark source)",
        )
    },
    C + "/settle": {
        "post": _operation(
            "durable consumer: settle below a sequence number",
            {"200": "sequence position"},
            body=_object({"below": {"type": "integer", "minimum": 0}}, ("below",)),
        )
    },
    C + "/log": {
        "get": _operation(
            "durable consumer: read deliveries by sequence number",
            {"200": "deliveries", "409": "log gap"},
            answers=DELIVERIES,
            query=(
                _query("from", {"type": "integer", "minimum": 0}),
                _query("to", {"type": "integer", "minimum": 0}),
            ),
        )
    },
    Q + "/members": {
        "get": _operation(
            "the queue's replica set",
            {"200": "members"},
            about="replica set changes and leadership transfer",
        ),
        "post": _operation(
            "add a member",
            {"200": "added", "409": "refused"},
            body=_object({"node": {"type": "string"}}, ("node",)),
        ),
    },
    Q + "/members/{node}": {
        "get": _operation("one member's status", {"200": "status"}),
        "delete": _operation("remove a member", {"200": "removed", "409": "refused"}),
    },
    Q + "/members/{node}/checkpoint": {
        "post": _operation(
            "that node's replica takes a snapshot now (force_checkpoint): its status after", {"200": "status"}
        )
    },
    Q + "/leader": {
        "post": _operation(
            "transfer leadership",
            {"200": "transferred", "409": "refused"},
            body=_object({"node": {"type": "string"}}),
        )
    },
    "/": {"get": _operation("the management UI's page (docs/use/ui.md)", {"200": "HTML"}, public=True)},
    "/ui/{file}": {"get": _operation("a file of the management UI", {"200": "the file"}, public=True)},
    "/api/stream": {
        "get": _operation(
            "the streaming connection: a WebSocket carrying msgpack frames (docs/use/stream-protocol.md)",
            {"101": "switching to the WebSocket protocol"},
            about=(
                "the streaming connection: a WebSocket of msgpack frames carrying pipelined publishes "
                "(each confirmed after majority commit, as the 201 is) and pushed deliveries with "
                "prefetch credit, acks and nacks "
                "(docs/use/stream-protocol.md)"
            ),
        )
    },
    "/api/nodes": {
        "get": _operation(
            "cluster members, with RabbitMQ's fields as each reports them (running, uptime, mem_used,"
            " mem_limit, mem_alarm, disk_free, disk_free_limit, disk_free_alarm, fd_used, proc_used,"
            " partitions)",
            {"200": "nodes"},
            query=PAGING_QUERY,
            about=(
                "cluster membership; each member with RabbitMQ's fields as it reports them "
                "(`running`, `uptime`, `mem_used`, `mem_limit`, `mem_alarm`, `disk_free`, "
                "`disk_free_limit`, `disk_free_alarm`, `fd_used`, `proc_used`, `partitions`)"
            ),
        ),
        "post": _operation(
            "join a node",
            {"200": "joined", "201": "joined", "409": "refused"},
            body=_object(
                {"name": {"type": "string"}, "http": {"type": "string"}, "raft": {"type": "string"}}
            ),
        ),
    },
    "/api/nodes/{node}": {
        "get": _operation("one member, as GET /api/nodes lists it", {"200": "node"}),
        "delete": _operation("forget a stopped node", {"204": "forgotten", "409": "running"}),
    },
}

PATH_PARAMETERS: dict[str, Schema] = {
    "q": QUEUE_NAME,
    "tag": {"type": "string", "minLength": 1},
    "user": USER_NAME,
    "policy": POLICY_NAME,
    "task": {"type": "string", "minLength": 1},
    "node": {"type": "string", "minLength": 1},
    "file": {"type": "string", "minLength": 1},
}


def _with_path_parameters(path: str, item: dict[str, Any]) -> dict[str, Any]:
    names = [part[1:-1] for part in path.split("/") if part.startswith("{")]
    if names:
        return {"parameters": [_path_param(n, PATH_PARAMETERS[n]) for n in names], **item}
    return item


def spec() -> dict[str, Any]:
    """The OpenAPI 3.1 document."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "quorumq",
            "version": "1",
            "description": "Raft-replicated quorum queues. Errors are JSON {error, reason}. " + WIRE_FORMATS,
        },
        "components": {
            "securitySchemes": {
                "basic": {"type": "http", "scheme": "basic"},
                "bearer": {"type": "http", "scheme": "bearer"},
            }
        },
        "security": [{"basic": []}, {"bearer": []}],
        "paths": {path: _with_path_parameters(path, item) for path, item in PATHS.items()},
    }


async def serve_spec(request: web.Request) -> web.StreamResponse:
    """GET /api/openapi.json."""
    return web.json_response(spec())
