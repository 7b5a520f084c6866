"""Client credentials never show in a repr (logs, tracebacks, debuggers)."""

from __future__ import annotations

import base64

from quorumq.auth import resolve_credentials


def test_the_repr_of_client_credentials_hides_the_authorization_header() -> None:
    basic = resolve_credentials(("alice", "s3cret-pw"), None, None)
    bearer = resolve_credentials(None, "tok-abc123", None)
    encoded = base64.b64encode(b"alice:s3cret-pw").decode()
    for shown in (repr(basic), str(basic)):
        assert encoded not in shown and "s3cret-pw" not in shown, shown
    assert "tok-abc123" not in repr(bearer), repr(bearer)
    assert basic.headers["Authorization"] == f"Basic {encoded}"  # still sent
