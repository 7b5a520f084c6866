"""Which version of each replicated format a node writes (`cluster/format_versions.py`): the newest only
once every other node of the cluster said it reads it, whatever groups those nodes belong to now."""

from __future__ import annotations

from cluster.entry_codec import QUEUE_OP_VERSION
from cluster.format_versions import FormatVersions
from cluster.metadata.codec import CODEC_VERSION

CLUSTER = ("a", "b", "c", "d")


def test_the_newest_versions_wait_for_every_node_of_the_cluster_not_only_a_group() -> None:
    formats = FormatVersions("a", lambda: CLUSTER)
    for peer in ("b", "c"):  # a queue group of a, b and c
        formats.on_control(peer, {"queue_codec": QUEUE_OP_VERSION, "metadata_codec": CODEC_VERSION})
    assert (formats.writes_queue_ops(), formats.writes_metadata()) == (0, 0)  # d could join the group
    formats.on_control("d", formats.announcement())
    assert (formats.writes_queue_ops(), formats.writes_metadata()) == (QUEUE_OP_VERSION, CODEC_VERSION)


def test_the_separate_frames_of_the_previous_version_count_for_each_format() -> None:
    formats = FormatVersions("a", lambda: ("a", "b"))
    formats.on_control("b", {"metadata_codec": CODEC_VERSION})
    assert formats.report() == {
        "queue_operations": {"reads": QUEUE_OP_VERSION, "writes": 0},
        "metadata": {"reads": CODEC_VERSION, "writes": CODEC_VERSION},
    }
    formats.on_control("b", {"queue_codec": QUEUE_OP_VERSION})
    assert formats.writes_queue_ops() == QUEUE_OP_VERSION and formats.metadata_read_by("b") == CODEC_VERSION


def test_one_frame_announces_both_formats() -> None:
    assert FormatVersions("a", lambda: CLUSTER).announcement() == {
        "queue_codec": QUEUE_OP_VERSION,
        "metadata_codec": CODEC_VERSION,
    }
