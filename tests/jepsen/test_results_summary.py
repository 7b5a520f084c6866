"""The results summary over small run directories made here: groups, counts, causes, gaps, markers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from jepsen_tests.history import Op
from jepsen_tests.message_groups import group_detail, held_detail
from jepsen_tests.nemesis_log import NemesisLog
from jepsen_tests.summary import BEGIN, END, main, markers, percentile

COMMAND = "quorumq-jepsen run --time 20 --seed 1 --repeat 2 --nodes 3"


def make_run(
    root: Path,
    name: str,
    ops: list[Op],
    faults: list[tuple[float, float, str, str]],
    command: str,
    passed: bool,
) -> Path:
    """A run directory with this history, these fault windows (start, stop, family, kind) and a verdict."""
    run = root / name
    run.mkdir(parents=True)
    (run / "history.jsonl").write_text("".join(op.to_json() + "\n" for op in ops))
    times = iter([t for start, stop, _, _ in faults for t in (start, stop)])
    log = NemesisLog(run / "nemesis.jsonl", lambda: next(times))
    for window, (_, _, nemesis, kind) in enumerate(faults):
        log.write("start", window=window, nemesis=nemesis, kind=kind, nodes=[], description=kind)
        log.write("stop", window=window)
    verdict = {
        "passed": passed,
        "command": command,
        "commit": "0123456789abcdef",
        "dirty": False,
        "config": {"nodes": 3, "seed": 1},
    }
    (run / "verdict.json").write_text(json.dumps(verdict))
    return run


def publish(value: int, invoked: float, completed: float, outcome: str = "ok") -> list[Op]:
    return [
        Op("p0", "invoke", "enqueue", value, invoked, "q"),
        Op("p0", outcome, "enqueue", value, completed, "q"),
    ]  # type: ignore[arg-type]


def consume(value: int, at: float, error: str | None = None) -> list[Op]:
    return [
        Op("c0", "invoke", "dequeue", value, at, "q"),
        Op("c0", "ok", "dequeue", value, at + 0.01, "q", error),
    ]


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    first = [
        *publish(1, 0.0, 0.1),
        *publish(2, 1.0, 1.1, "info"),
        *publish(3, 5.5, 6.5),  # the first publish invoked after the kill (at 5) is confirmed 1.5 s in
        *publish(4, 8.1, 8.3),  # the first after the heal (at 8): 0.3 s
        *consume(1, 9.0, error="timeout"),
        *consume(1, 9.5),  # a duplicate: the ack before it failed
        *consume(2, 9.6),
        *consume(3, 9.7),
        *consume(4, 9.8),
    ]
    make_run(root, "a-seed1-n3", first, [(5.0, 8.0, "kill", "leader")], COMMAND, passed=True)
    second = [*publish(10, 0.0, 0.1), *publish(11, 3.2, 3.7)]  # both lost: they never came out
    grouped = [
        Op("p0", t, "enqueue", v, 0.2, "q", detail=group_detail("g0"))
        for v in (12, 13)
        for t in ("invoke", "ok")
    ]
    second += grouped  # 13 behind 12 in group g0, and both out in one batch, 13 first
    second += [Op("c0", "invoke", "dequeue", v, 0.5, "q", detail=held_detail(1, "g0")) for v in (13, 12)]
    second += [Op("c0", "ok", "dequeue", v, 0.6, "q") for v in (13, 12)]
    make_run(root, "b-seed2-n3", second, [(3.0, 4.0, "kill", "leader")], COMMAND, passed=False)
    other = [*publish(20, 0.0, 0.1), *consume(20, 1.0)]
    make_run(root, "c-seed9-n3", other, [], "quorumq-jepsen run --time 20 --seed 9 --nodes 3", passed=True)
    (root / "d-seed3-n3").mkdir()
    (root / "d-seed3-n3" / "history.jsonl").write_text("")  # broke off: no verdict.json
    return root


def table_row(output: str, header_starts: str, row_starts: str) -> dict[str, str]:
    """The first row starting `row_starts` in the table whose header starts `header_starts`, by column."""
    lines = output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith(header_starts))
    names = [cell.strip() for cell in lines[header].strip("|").split("|")]
    row = next(line for line in lines[header + 2 :] if line.startswith(row_starts))
    return dict(zip(names, (cell.strip() for cell in row.strip("|").split("|")), strict=True))


def test_runs_are_grouped_by_command_line_with_their_counts(runs: Path) -> None:
    answer = CliRunner().invoke(main, [str(runs)])
    assert answer.exit_code == 0, answer.output
    assert answer.output.startswith("3 runs in 2 groups (command line and commit); 2 passed.\n")
    group = table_row(answer.output, "| command | commit | nodes", f"| `{COMMAND}`")
    assert group == {
        "command": f"`{COMMAND}`",
        "commit": "0123456789ab",
        "nodes": "3",
        "schedules": "2",
        "passed": "1/2",
        "attempts": "8",
        "confirmed": "7",
        "info": "1",
        "fail": "0",
        "dequeued": "7",
        "lost": "2",
        "copies missing": "0",
        "group overlap": "1",
        "group order": "1",
        "unexpected": "0",
        "wrong queue": "0",
        "protocol errors": "0",
        "duplicated": "1",
        "recovered": "1",
        "faults": "2",
    }
    causes = table_row(answer.output, "| command | commit | duplicated dequeues", f"| `{COMMAND}`")
    assert causes["duplicated dequeues"] == "1" and causes["rate"] == "14.286%"
    assert (causes["ack-lost"], causes["unexplained"], causes["max no-fault rate"]) == ("1", "0", "0.000%")
    assert "Failed runs: b-seed2-n3." in answer.output
    assert "Broke off (no verdict.json): d-seed3-n3." in answer.output


def test_fault_variants_are_counted_with_their_publish_gaps(runs: Path) -> None:
    answer = CliRunner().invoke(main, [str(runs / "a-seed1-n3"), str(runs / "b-seed2-n3")])
    assert "| kill leader | 2 | 0.70 | 1.50 | 1.50 | 0.30 | 0.30 | 0.30 | 1 |" in answer.output


def test_nearest_rank_percentiles() -> None:
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile(list(range(1, 101)), 99) == 99
    assert percentile([5.0], 99) == 5.0


def test_the_tables_replace_only_the_marked_section_and_again_the_same(runs: Path, tmp_path: Path) -> None:
    doc = tmp_path / "jepsen.md"
    doc.write_text(f"# Results\n\nbefore\n{BEGIN}\nold tables\n{END}\nafter\n")
    assert CliRunner().invoke(main, [str(runs), "--into", str(doc)]).exit_code == 0
    once = doc.read_text()
    assert (
        "old tables" not in once
        and once.startswith("# Results\n\nbefore\n")
        and once.endswith(f"{END}\nafter\n")
    )
    assert "| kill leader |" in once
    assert CliRunner().invoke(main, [str(runs), "--into", str(doc)]).exit_code == 0
    assert doc.read_text() == once
    unmarked = tmp_path / "plain.md"
    unmarked.write_text("no markers\n")
    refused = CliRunner().invoke(main, [str(runs), "--into", str(unmarked)])
    assert refused.exit_code == 2 and "markers" in refused.output


def test_a_named_section_is_replaced_between_its_own_markers_and_the_default_is_left(
    runs: Path, tmp_path: Path
) -> None:
    disk_begin, disk_end = markers("disk")
    assert (
        disk_begin.startswith("<!-- jepsen-summary-disk:begin ")
        and disk_end == "<!-- jepsen-summary-disk:end -->"
    )
    doc = tmp_path / "jepsen.md"
    doc.write_text(f"{BEGIN}\nold tables\n{END}\n{disk_begin}\nold disk tables\n{disk_end}\nafter\n")
    answer = CliRunner().invoke(main, [str(runs), "--into", str(doc), "--section", "disk"])
    assert answer.exit_code == 0, answer.output
    text = doc.read_text()
    assert text.startswith(f"{BEGIN}\nold tables\n{END}\n{disk_begin}\n3 runs in 2 groups")
    assert "old disk tables" not in text and text.endswith(f"{disk_end}\nafter\n")
    missing = CliRunner().invoke(main, [str(runs), "--into", str(doc), "--section", "power"])
    assert missing.exit_code == 2 and "jepsen-summary-power:begin" in missing.output
    without_into = CliRunner().invoke(main, [str(runs), "--section", "disk"])
    assert without_into.exit_code == 2 and "--into" in without_into.output
