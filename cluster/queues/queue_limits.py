"""Bounds of what a queue command takes, for the API to check requests against before calling a queue."""

from __future__ import annotations

from queue_state.arguments import INT64_MAX
from queue_state.commands import MAX_REASON_CHARS, MESSAGE_PRIORITY_MAX
from queue_state.dedupe_window import MAX_DEDUPE_ID_CHARS
from queue_state.message_groups import MAX_GROUP_BYTES, group_name_problem

__all__ = [
    "INT64_MAX",
    "MAX_DEDUPE_ID_CHARS",
    "MAX_GROUP_BYTES",
    "MAX_PUBLISH_WAIT_MS",
    "MAX_REASON_CHARS",
    "MESSAGE_PRIORITY_MAX",
    "group_name_problem",
]

MAX_PUBLISH_WAIT_MS = 30_000
"""The longest a publish may wait for room in a full reject-publish queue (`QueueDoor.publish`)."""
