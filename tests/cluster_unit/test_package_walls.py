"""The walls of two cluster packages: the metadata machine imports nothing of the node (only the
standard library, msgpack and itself), and membership reaches its node only through protocols (never
`cluster.node`) and speaks no HTTP (the server injects the join)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

CLUSTER = Path(__file__).resolve().parents[2] / "cluster"


def imported(package: Path) -> dict[str, set[str]]:
    """Every module each file of `package` imports, by file."""
    found: dict[str, set[str]] = {}
    for source in sorted(package.rglob("*.py")):
        modules = found.setdefault(source.name, set())
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                modules.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module is not None:
                modules.add(node.module)
    return found


def test_the_metadata_machine_imports_only_the_standard_library_msgpack_and_itself() -> None:
    for source, modules in imported(CLUSTER / "metadata").items():
        for module in modules:
            top = module.split(".")[0]
            allowed = (
                top in sys.stdlib_module_names or top == "msgpack" or module.startswith("cluster.metadata.")
            )
            assert allowed, f"cluster/metadata/{source} imports {module}"


def test_membership_imports_neither_the_node_nor_an_http_client() -> None:
    for source, modules in imported(CLUSTER / "membership").items():
        assert not {"cluster.node", "aiohttp"} & modules, f"cluster/membership/{source} imports {modules}"
