"""The JSON Schemas the OpenAPI document gives by hand: of the answers it describes (deliveries, the
health report) and of the `max_bytes` query parameter. Request bodies are `RequestBody` structs,
whose schemas msgspec gives."""

from __future__ import annotations

from typing import Any

import msgspec

from api.deliveries import MAX_BYTES_ABOUT, MaxBytes
from api.endpoints import Content

JSON = "application/json"
MSGPACK = "application/msgpack"
Schema = dict[str, Any]

MAX_BYTES: Schema = {**msgspec.json.schema(MaxBytes), "description": MAX_BYTES_ABOUT}

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
DELIVERIES: Content = {
    JSON: {"schema": {"type": "array", "items": DELIVERY}},
    MSGPACK: {"schema": {"type": "array", "items": PACKED_DELIVERY}},
}
ONE_DELIVERY: Content = {JSON: {"schema": DELIVERY}, MSGPACK: {"schema": PACKED_DELIVERY}}

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
HEALTH: Content = {
    JSON: {
        "schema": {
            "type": "object",
            "required": [
                "node",
                "status",
                "metadata_leader",
                "groups_hosted",
                "groups_led",
                "damage",
                "store_check",
            ],
            "properties": {
                "node": {"type": "string"},
                "status": {"enum": ["ok", "no_quorum", "initialising", "halted"]},
                "metadata_leader": {"type": ["string", "null"]},
                "groups_hosted": {"type": "integer"},
                "groups_led": {"type": "integer"},
                "groups_quiet": {"type": "integer", "description": "groups idle here: they tick no clock"},
                "groups_without_leader": GROUP_IDS,
                "groups_repairing": GROUP_IDS,
                "groups_halted": {
                    "type": "array",
                    "description": (
                        "groups whose replica here cannot read the committed entry at index: halted there"
                    ),
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
    }
}
