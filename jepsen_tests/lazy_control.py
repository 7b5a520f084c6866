"""The control channel of a lazy filesystem daemon: synchronous requests on an abstract Unix socket.

The socket is named after the store directory's real path (abstract names need no file and vanish
with the daemon; they belong to the network namespace, so the daemon and the harness both stay in the
root one). A request is one line: `stats` or `discard`, answered with the counts of what a discard
would lose now (`LazyState.stats`), for `discard` as they were just before everything unsynced was
dropped, which is done when the answer arrives; `fill BYTES` (leave that many bytes free) or `unfill`,
answered with the space used and the capacity (`LazyState.space`). An answer is one JSON line; a
failure answers {"error": "..."}.
"""

from __future__ import annotations

import hashlib
import json
import signal
import socket
import threading
from pathlib import Path
from typing import Any

from jepsen_tests.lazy_state import LazyState

REQUESTS = ("stats", "discard", "fill", "unfill")
DAEMON_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


class ControlError(RuntimeError):
    """The daemon could not be reached or refused the request."""


def control_address(store_dir: Path) -> str:
    """The abstract socket name of the daemon serving `store_dir`."""
    digest = hashlib.sha256(str(store_dir.resolve()).encode()).hexdigest()[:32]
    return f"\0quorumq-lazyfs-{digest}"


def daemon_thread(target: Any, name: str) -> threading.Thread:
    """Start a daemon thread that never receives the signals libfuse handles (they must reach the
    main thread, whose loop exits and unmounts on them)."""

    def run() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, DAEMON_SIGNALS)
        target()

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread


def serve(state: LazyState, store_dir: Path) -> socket.socket:
    """Listen for control requests on `store_dir`'s socket, answering them in a background thread."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(control_address(store_dir))
    except OSError as exc:
        server.close()
        raise ControlError(f"another daemon already serves {store_dir}: {exc}") from exc
    server.listen()

    def accept_forever() -> None:
        while True:
            connection, _ = server.accept()
            with connection, connection.makefile("rwb") as stream:
                request = stream.readline().decode().strip()
                stream.write(json.dumps(answer(state, request)).encode() + b"\n")

    daemon_thread(accept_forever, "lazyfs-control")
    return server


def answer(state: LazyState, request: str) -> dict[str, Any]:
    """Carry out one control request."""
    verb, _, argument = request.partition(" ")
    if verb not in REQUESTS or bool(argument) != (verb == "fill") or (argument and not argument.isdecimal()):
        return {"error": f"unknown request {request!r}; known: stats, discard, fill BYTES, unfill"}
    with state.lock:
        try:
            if verb == "fill":
                return state.fill(int(argument))
            if verb == "unfill":
                return state.unfill()
            return state.discard() if verb == "discard" else state.stats()
        except OSError as exc:
            return {"error": f"{request} failed: {exc}"}


def call(store_dir: Path, request: str, timeout: float = 30.0) -> dict[str, int]:
    """Send a request to the daemon serving `store_dir` and return its answer."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(timeout)
            client.connect(control_address(store_dir))
            client.sendall(request.encode() + b"\n")
            with client.makefile("rb") as stream:
                line = stream.readline()
    except OSError as exc:
        raise ControlError(f"lazy filesystem daemon for {store_dir}: {exc}") from exc
    if not line:
        raise ControlError(f"lazy filesystem daemon for {store_dir} closed the connection")
    reply = json.loads(line)
    if "error" in reply:
        raise ControlError(reply["error"])
    return {key: int(value) for key, value in reply.items()}
