"""Which version of each replicated format a node writes (`cluster/replication/format_versions.py`): the
newest only once every other node of the cluster said it reads it, whatever groups those nodes belong to
now."""

from __future__ import annotations

import pytest

from cluster.errors import FormatsNotYetKnown, Refused
from cluster.replication.entry_codec import (
    DELAY_OP_VERSION,
    HOLDING_OP_VERSION,
    PRIORITY_OP_VERSION,
    QUEUE_OP_VERSION,
)
from cluster.replication.format_versions import UPGRADE_IN_PROGRESS, FormatVersions
from metadata_state.codec import CODEC_VERSION

CLUSTER = ("a", "b", "c", "d")


def linked(peer: str) -> bool:
    """Every peer's link is up."""
    return True


def test_the_newest_versions_wait_for_every_node_of_the_cluster_not_only_a_group() -> None:
    formats = FormatVersions("a", lambda: CLUSTER, linked)
    for peer in ("b", "c"):  # a queue group of a, b and c
        formats.on_control(peer, {"queue_codec": QUEUE_OP_VERSION, "metadata_codec": CODEC_VERSION})
    assert (formats.writes_queue_ops(), formats.writes_metadata()) == (0, 0)  # d could join the group
    formats.on_control("d", formats.announcement())
    assert (formats.writes_queue_ops(), formats.writes_metadata()) == (QUEUE_OP_VERSION, CODEC_VERSION)


def test_the_separate_frames_of_the_previous_version_count_for_each_format() -> None:
    formats = FormatVersions("a", lambda: ("a", "b"), linked)
    formats.on_control("b", {"metadata_codec": CODEC_VERSION})
    assert formats.report() == {
        "queue_operations": {"reads": QUEUE_OP_VERSION, "writes": 0},
        "metadata": {"reads": CODEC_VERSION, "writes": CODEC_VERSION},
    }
    formats.on_control("b", {"queue_codec": QUEUE_OP_VERSION})
    assert formats.writes_queue_ops() == QUEUE_OP_VERSION and formats.metadata_read_by("b") == CODEC_VERSION


def test_one_frame_announces_both_formats() -> None:
    assert FormatVersions("a", lambda: CLUSTER, linked).announcement() == {
        "queue_codec": QUEUE_OP_VERSION,
        "metadata_codec": CODEC_VERSION,
    }


def test_rule_a_version_not_yet_known_to_be_read_everywhere_is_not_yet_known_and_an_older_one_refused() -> (
    None
):
    formats = FormatVersions("a", lambda: ("a", "b", "c"), linked)
    formats.on_control("b", formats.announcement())
    with pytest.raises(FormatsNotYetKnown, match="c"):  # c said nothing yet
        formats.require_queue_ops(HOLDING_OP_VERSION, "no touches")
    formats.on_control("c", {"queue_codec": HOLDING_OP_VERSION - 1})
    with pytest.raises(Refused) as refused:
        formats.require_queue_ops(HOLDING_OP_VERSION, "no touches")
    assert refused.value.code == UPGRADE_IN_PROGRESS and "no touches" in refused.value.reason
    formats.require_queue_ops(HOLDING_OP_VERSION - 1, "no plain returns")
    with pytest.raises(FormatsNotYetKnown):
        formats.require_metadata(CODEC_VERSION, "no policies")


def test_a_publish_needs_the_version_of_its_delays_and_of_its_priorities_and_no_other() -> None:
    formats = FormatVersions("a", lambda: ("a", "b"), linked)
    formats.on_control("b", {"queue_codec": DELAY_OP_VERSION - 1})
    formats.require_publish(delays=False, priorities=False)
    with pytest.raises(Refused, match="no delays"):
        formats.require_publish(delays=True, priorities=False)
    formats.on_control("b", {"queue_codec": DELAY_OP_VERSION})
    formats.require_publish(delays=True, priorities=False)
    with pytest.raises(Refused, match="no priorities"):
        formats.require_publish(delays=False, priorities=True)
    formats.on_control("b", {"queue_codec": PRIORITY_OP_VERSION})
    formats.require_publish(delays=True, priorities=True)
