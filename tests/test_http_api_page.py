"""docs/use/http-api.md is made from the OpenAPI document (`scripts/http_api_page.py`), so it cannot
drift from the routes (`tests/security/test_openapi.py` holds the document to them)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from api.app import ENDPOINTS
from api.openapi import spec

ROOT = Path(__file__).resolve().parents[1]
_SPEC = importlib.util.spec_from_file_location("http_api_page", ROOT / "scripts" / "http_api_page.py")
assert _SPEC is not None and _SPEC.loader is not None
page_script = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(page_script)  # a script of the repository, not an installed module


def test_rule_the_http_api_page_is_what_the_openapi_document_makes() -> None:
    run = subprocess.run(
        [sys.executable, "scripts/http_api_page.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert page_script.PAGE.read_text() == page_script.render(spec(ENDPOINTS))


def test_the_page_lists_every_operation_with_its_description_and_body() -> None:
    page = page_script.render(spec(ENDPOINTS))
    document = spec(ENDPOINTS)
    operations = [op for item in document["paths"].values() for m, op in item.items() if m != "parameters"]
    assert page.count("\n## ") == sum(1 for op in operations if "x-same-as" not in op)
    paths = document["paths"]
    aliased = {path for path, item in paths.items() if any("x-same-as" in op for op in item.values())}
    assert aliased and f"({len(aliased)} paths)" in page
    assert "## PUT /api/queues/{q}" in page and "409 different, 400 bad argument" in page
    publish = "Body (`application/json` or `application/msgpack`): A publish: its messages, the publisher"
    assert publish in page and "`messages` (array, required)" in page


def test_a_stale_page_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "http-api.md"
    stale.write_text("# HTTP API\n\nan older page\n")
    monkeypatch.setattr(page_script, "PAGE", stale)
    assert page_script.main(["http_api_page.py", "--check"]) == 1
