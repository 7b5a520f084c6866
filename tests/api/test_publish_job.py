"""A publish body read into a `PublishJob`: a `not_before` becomes a delay on the node's own clock (the
one its environment gives, virtual in the whole-node simulation), never the process's wall clock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from api.errors import ApiError
from api.publish_job import publish_of
from cluster.config import Address, NodeConfig

NODE_NOW_MS = 1_000_000  # far in the past of any real wall clock


def test_rule_a_not_before_is_measured_on_the_nodes_clock(tmp_path: Path) -> None:
    config = NodeConfig("a", tmp_path, Address("a", 8080), Address("a", 7000))
    body = {"messages": [{"body": "x", "not_before": NODE_NOW_MS + 5_000}, {"body": "y"}]}
    job = publish_of(body, config, NODE_NOW_MS)
    assert job.delays == [5_000, None]


def test_a_group_is_kept_as_the_header_x_group_id_the_field_winning_over_the_header(tmp_path: Path) -> None:
    config = NodeConfig("a", tmp_path, Address("a", 8080), Address("a", 7000))
    body = {
        "messages": [
            {"body": "a", "group": "order-1"},
            {"body": "b", "group": "order-2", "headers": {"x-group-id": "order-9"}},
            {"body": "c", "headers": {"x-group-id": "order-3"}},
            {"body": "d"},
        ]
    }
    job = publish_of(body, config, NODE_NOW_MS)
    assert [stored.group for stored, _ in job.messages] == ["order-1", "order-2", "order-3", None]


@pytest.mark.parametrize(
    ("message", "named"),
    [
        ({"group": ""}, "messages[0].group"),
        ({"group": "é" * 128}, "messages[0].group"),
        ({"group": "\ud800"}, "messages[0].group"),
        ({"headers": {"x-group-id": "x" * 256}}, "messages[0].headers.x-group-id"),
        ({"headers": {"x-group-id": 7}}, "messages[0].headers.x-group-id"),
        ({"group": 7}, "group"),
    ],
)
def test_a_group_that_is_not_1_to_255_bytes_of_utf8_is_a_400_naming_it(
    tmp_path: Path, message: dict[str, Any], named: str
) -> None:
    config = NodeConfig("a", tmp_path, Address("a", 8080), Address("a", 7000))
    with pytest.raises(ApiError) as refused:
        publish_of({"messages": [{"body": "x", **message}]}, config, NODE_NOW_MS)
    assert refused.value.status == 400 and named in str(refused.value)
