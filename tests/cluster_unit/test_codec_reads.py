"""The rolling-upgrade rule (`cluster/codec_reads.py`): a node writes the newest version of a format every
other member said it reads, version 0 while one said nothing."""

from __future__ import annotations

from cluster.codec_reads import CodecReads


def test_a_node_writes_version_0_until_every_other_member_said_it_reads_the_newest() -> None:
    reads = CodecReads("queue_codec", 1)
    assert reads.version_for(["b", "c"]) == 0  # nobody said anything: they may run older code
    reads.on_control("b", {"queue_codec": 1})
    assert reads.version_for(["b", "c"]) == 0
    reads.on_control("c", {"queue_codec": 1, "leaders": {}})
    assert reads.version_for(["b", "c"]) == 1


def test_a_group_with_no_other_member_is_written_in_the_newest_version() -> None:
    assert CodecReads("queue_codec", 1).version_for([]) == 1


def test_rule_a_member_that_reads_only_an_older_version_keeps_the_log_in_that_version() -> None:
    reads = CodecReads("queue_codec", 2)
    reads.on_control("b", {"queue_codec": 1})
    assert reads.version_for(["b"]) == 1  # not 0: version 1 has what version 0 lacks (the entry's time)
    assert reads.version_for(["b", "c"]) == 0  # c said nothing
    reads.on_control("b", {"queue_codec": 3})  # a newer node reads this node's version too
    assert reads.version_for(["b"]) == 2


def test_frames_without_the_key_or_with_a_malformed_value_say_nothing() -> None:
    reads = CodecReads("queue_codec", 1)
    reads.on_control("b", {"queue_codec": 1})
    for frame in ({}, {"metadata_codec": 0}, {"queue_codec": "1"}, {"queue_codec": None}):
        reads.on_control("b", frame)
    assert reads.version_for(["b"]) == 1
    reads.on_control("c", {"queue_codec": True})  # a bool is not a version
    assert reads.version_for(["c"]) == 0


def test_the_announcement_names_the_key_and_the_version_this_node_reads() -> None:
    reads = CodecReads("queue_codec", 1)
    other = CodecReads("queue_codec", 1)
    other.on_control("a", reads.announcement())
    assert reads.announcement() == {"queue_codec": 1} and other.version_for(["a"]) == 1
