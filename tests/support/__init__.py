"""Helpers for the tests of every directory (`tests/` is on the import path: see pyproject.toml)."""
