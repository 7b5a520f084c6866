"""The server's distribution ships every package of the source tree (an installed node imports them all,
and a package left out fails only outside an editable install: the Docker image), and the management
UI's files."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOP_LEVEL = ("api", "cli", "cluster", "jepsen_tests", "metadata_state", "queue_state", "raft_log", "spark_io")


def test_the_wheel_holds_every_package_of_the_source_tree(tmp_path: Path) -> None:
    source = tmp_path / "source"  # a copy: a build/ directory left in the tree would hide a missing package
    unbuilt = shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__", ".*_cache")
    shutil.copytree(ROOT, source, ignore=unbuilt)
    wheel_command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    subprocess.run([*wheel_command, "-w", tmp_path, source], check=True, cwd=tmp_path)
    (wheel,) = tmp_path.glob("quorumq-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        shipped = {str(Path(name).parent) for name in names if name.endswith("/__init__.py")}
    packages = {
        str(init.parent.relative_to(ROOT)) for top in TOP_LEVEL for init in (ROOT / top).rglob("__init__.py")
    }
    assert shipped == packages  # the client ships in its own distribution, tests and tools not at all
    ui_files = {f"api/ui/{path.name}" for path in (ROOT / "api" / "ui").iterdir()}
    assert ui_files == {name for name in names if name.startswith("api/ui/")} and len(ui_files) == 3
