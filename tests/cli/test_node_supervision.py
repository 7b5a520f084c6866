"""Which harness nodes are started again after exiting with EX_TEMPFAIL (75: damage found, decisions 0011
and 0016): only supervised ones. Elsewhere an exit 75 is a node that stopped, which a test must see
rather than have hidden by a silent restart. The processes are real; their command is a stand-in."""

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from cli.node_processes import NodeProcess, wait_until

# Exits 75 the first time (no marker yet), then runs until stopped.
_SCRIPT = (
    "import os, sys, time\n"
    "marker = sys.argv[1]\n"
    "if not os.path.exists(marker):\n"
    "    open(marker, 'w').close()\n"
    "    os._exit(os.EX_TEMPFAIL)\n"
    "time.sleep(60)\n"
)


@dataclass
class _ExitsOnceNode(NodeProcess):
    """A node process whose command exits 75 once, then stays up."""

    def command(self) -> list[str]:
        return [sys.executable, "-c", _SCRIPT, str(self.data_dir / "exited-once")]


def _node(tmp_path: Path, supervised: bool) -> NodeProcess:
    tmp_path.mkdir(exist_ok=True)
    node = _ExitsOnceNode("node1", "127.0.0.1", 1, 2, tmp_path, tmp_path / "node1.log")
    node.supervised = supervised
    return node


def test_rule_an_unsupervised_node_that_exits_75_is_seen_stopped(tmp_path: Path) -> None:
    node = _node(tmp_path, supervised=False)
    node.start()
    assert node.process is not None
    assert node.process.wait(30) == os.EX_TEMPFAIL
    assert (node.running, node.restarts) == (False, 0)


def test_a_supervised_node_that_exits_75_is_started_again(tmp_path: Path) -> None:
    node = _node(tmp_path, supervised=True)
    node.start()
    try:
        wait_until(lambda: node.restarts == 1 and node.process is not None and node.running, 30, "a restart")
    finally:
        node.stop()
