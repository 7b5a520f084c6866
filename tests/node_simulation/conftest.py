"""Make the repository's `node_simulation/` importable: a top-level directory, not an installed package
(it does not ship in the server's wheel)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = str(Path(__file__).resolve().parents[2])
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)
