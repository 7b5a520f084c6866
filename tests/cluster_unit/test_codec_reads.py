"""The rolling-upgrade rule (`cluster/replication/codec_reads.py`): a node writes the newest version of a
format every other member said it reads, version 0 while one said nothing."""

from __future__ import annotations

from cluster.replication.codec_reads import CodecReads


def linked(peer: str) -> bool:
    """Every peer's link is up."""
    return True


def test_a_node_writes_version_0_until_every_other_member_said_it_reads_the_newest() -> None:
    reads = CodecReads("queue_codec", 1, linked)
    assert reads.version_for(["b", "c"]) == 0  # nobody said anything: they may run older code
    reads.on_control("b", {"queue_codec": 1})
    assert reads.version_for(["b", "c"]) == 0
    reads.on_control("c", {"queue_codec": 1, "leaders": {}})
    assert reads.version_for(["b", "c"]) == 1


def test_a_group_with_no_other_member_is_written_in_the_newest_version() -> None:
    assert CodecReads("queue_codec", 1, linked).version_for([]) == 1


def test_rule_a_member_that_reads_only_an_older_version_keeps_the_log_in_that_version() -> None:
    reads = CodecReads("queue_codec", 2, linked)
    reads.on_control("b", {"queue_codec": 1})
    assert reads.version_for(["b"]) == 1  # not 0: version 1 has what version 0 lacks (the entry's time)
    assert reads.version_for(["b", "c"]) == 0  # c said nothing
    reads.on_control("b", {"queue_codec": 3})  # a newer node reads this node's version too
    assert reads.version_for(["b"]) == 2


def test_frames_without_the_key_or_with_a_malformed_value_say_nothing() -> None:
    reads = CodecReads("queue_codec", 1, linked)
    reads.on_control("b", {"queue_codec": 1})
    for frame in ({}, {"metadata_codec": 0}, {"queue_codec": "1"}, {"queue_codec": None}):
        reads.on_control("b", frame)
    assert reads.version_for(["b"]) == 1
    reads.on_control("c", {"queue_codec": True})  # a bool is not a version
    assert reads.version_for(["c"]) == 0


def test_the_announcement_names_the_key_and_the_version_this_node_reads() -> None:
    reads = CodecReads("queue_codec", 1, linked)
    other = CodecReads("queue_codec", 1, linked)
    other.on_control("a", reads.announcement())
    assert reads.announcement() == {"queue_codec": 1} and other.version_for(["a"]) == 1


def test_rule_a_peers_word_stands_while_it_is_away_and_counts_no_more_once_it_links_again() -> None:
    """A node that is down reads nothing; one that links again may be another process (a restart, a
    rollback): what it said before counts no more until it speaks again."""
    up = {"b": True}
    reads = CodecReads("queue_codec", 3, lambda peer: up[peer])
    reads.on_control("b", {"queue_codec": 3})
    reads.link_lost("b")
    up["b"] = False
    assert reads.reads("b") == 3 and reads.version_for(["b"]) == 3
    up["b"] = True
    assert reads.reads("b") is None and reads.version_for(["b"]) == 0
    reads.on_control("b", {"queue_codec": 2})  # rolled back
    assert reads.version_for(["b"]) == 2
    reads.link_lost("b")
    reads.on_control("b", {"queue_codec": 3})  # a word heard after the loss is of the new link
    assert reads.reads("b") == 3


def test_rule_only_members_that_said_nothing_are_not_yet_known_and_an_older_one_is_refused() -> None:
    reads = CodecReads("queue_codec", 3, linked)
    reads.on_control("b", {"queue_codec": 3})
    assert reads.not_yet_known(["b", "c"], 3) == ["c"]
    reads.on_control("d", {"queue_codec": 2})
    assert reads.not_yet_known(["b", "c", "d"], 3) == []  # d reads an older one: refused, whatever c says
    assert reads.not_yet_known(["b", "c", "d"], 2) == ["c"]
