"""Scripts of the repository (run from its root: `python scripts/NAME.py`), importable by each other."""
