"""`quorumq-queues peek QUEUE POSITION` against a fake node: the message in table and JSON form, exit 70
past the last ready message, 2 for a position below 1, 69 when no node answers."""

from click.testing import CliRunner
from fake_node import FakeNode

from cli.main import cli as quorumq
from cli.queues import cli as queues


def run(node: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(queues, ["--node", node, *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def test_peek_shows_the_message_at_a_position_without_taking_it(
    node_address: str, fake_node: FakeNode
) -> None:
    CliRunner().invoke(quorumq, ["--node", node_address, "declare", "q"])
    CliRunner().invoke(quorumq, ["--node", node_address, "publish", "q", "first", "second"])
    code, out, _ = run(node_address, "--formatter", "json", "peek", "q", "2")
    assert code == 0
    assert '"body": "second"' in out and '"id": 2' in out
    code, out, _ = run(node_address, "peek", "q", "1")
    assert code == 0 and "first" in out
    assert len(fake_node.queues["q"].ready) == 2


def test_peek_past_the_end_exits_70_and_a_bad_position_is_a_usage_error(node_address: str) -> None:
    CliRunner().invoke(quorumq, ["--node", node_address, "declare", "q"])
    code, out, err = run(node_address, "peek", "q", "1")
    assert (code, out) == (70, "")
    assert err == "Error: queue 'q' has no message at position 1\n"
    code, _, err = run(node_address, "peek", "q", "0")
    assert code == 64 and "POSITION" in err
    code, _, err = run(node_address, "peek", "missing", "1")
    assert code == 70 and "no queue 'missing'" in err


def test_peek_with_no_node_reachable_exits_69(unused_address: str) -> None:
    code, _, err = run(unused_address, "peek", "q", "1")
    assert code == 69 and "no quorumq node reachable" in err
