"""The backlog controls (issue 40, slice 4; queue operations version 10): a cap on what the queue has
handed out and not had back (`x-max-unacked`, AMPS's MaxBacklog), discarding low priorities past a mark
(`x-discard-mark` with `x-discard-below-priority`, rsyslog's DiscardMark and DiscardSeverity), one
hand-out per interval (`x-dequeue-interval-ms`, rsyslog's DequeueSlowdown) and a daily window for
hand-outs (`x-dequeue-window`, rsyslog's dequeue time frame), judged on the time the leader stamps."""

from __future__ import annotations

import pytest

from queue_state.arguments import parse_arguments
from queue_state.command_codec import arguments_version, encode_command, encode_command_v0
from queue_state.commands import ApplyPolicy, EntryMeta, UpdateConfig

BACKLOG_ARGUMENTS = {
    "x-max-unacked": 4,
    "x-discard-mark": 10,
    "x-discard-below-priority": 2,
    "x-dequeue-interval-ms": 100,
    "x-dequeue-window": "22:00-06:00",
}


@pytest.mark.parametrize("argument", sorted(BACKLOG_ARGUMENTS))
def test_rule_the_backlog_controls_travel_from_operations_version_10_only(argument: str) -> None:
    both = {name: BACKLOG_ARGUMENTS[name] for name in ("x-discard-mark", "x-discard-below-priority")}
    arguments = both if argument in both else {argument: BACKLOG_ARGUMENTS[argument]}
    assert arguments_version(arguments) == 10
    policy = ApplyPolicy("p", arguments, 1)
    declared = UpdateConfig(parse_arguments(arguments))
    for command in (policy, declared):
        assert encode_command(command, 10)
        for version in range(1, 10):
            with pytest.raises(ValueError):
                encode_command(command, version)
    with pytest.raises(ValueError):
        encode_command_v0(EntryMeta(0), declared)
