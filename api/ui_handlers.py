"""The management UI's files (`api/ui/`: plain HTML, CSS and JavaScript over the API, docs/use/ui.md), served
by every node at `/` and `/ui/{file}` without credentials: they hold no data, and every call they make
to the API logs in as any other."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from api.access import Access
from api.endpoints import route
from api.errors import ApiError

UI_DIR = Path(__file__).with_name("ui")
_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
_FILES = {path.name: path for path in UI_DIR.iterdir() if path.suffix in _TYPES}
_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


@route(
    "GET",
    "/",
    access=Access.PUBLIC,  # no data: the API calls the page makes log in
    summary="the management UI's page (docs/use/ui.md)",
    responses={"200": "HTML"},
)
async def index(request: web.Request) -> web.StreamResponse:
    """GET /: the UI's page."""
    return _file("index.html")


@route(
    "GET",
    "/ui/{file}",
    access=Access.PUBLIC,
    summary="a file of the management UI",
    responses={"200": "the file"},
)
async def asset(request: web.Request) -> web.StreamResponse:
    """GET /ui/{file}: one of the UI's files (404 for any other name)."""
    return _file(request.match_info["file"])


def _file(name: str) -> web.StreamResponse:
    path = _FILES.get(name)
    if path is None:
        raise ApiError(404, "not_found", f"no UI file '{name}'")
    return web.Response(
        body=path.read_bytes(), content_type=_TYPES[path.suffix], charset="utf-8", headers=_HEADERS
    )
