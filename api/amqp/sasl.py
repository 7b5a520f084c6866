"""The credentials in a `connection.start-ok`: SASL PLAIN and RabbitMQ's AMQPLAIN.

PLAIN's response is `authzid NUL user NUL password` (RFC 4616; an authorisation identity other than
empty or the user's own is refused, as RabbitMQ refuses it). AMQPLAIN's is a field table of `LOGIN` and
`PASSWORD` written without the table's length prefix. A response that is neither is an ACCESS_REFUSED
connection error, as a wrong password is (`authentication_failure_close`).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from pamqp import decode
from pamqp.exceptions import UnmarshalingException

from api.amqp.reply_codes import ACCESS_REFUSED, AmqpError, connection_error


@dataclass(frozen=True, slots=True)
class Credentials:
    """A user name and password given at connection."""

    user: str
    password: str = ""

    def __repr__(self) -> str:
        return f"Credentials(user={self.user!r}, password=<hidden>)"


def credentials(mechanism: str, response: bytes | str) -> Credentials:
    """The credentials in `response` for `mechanism`; ACCESS_REFUSED for an unknown mechanism or a
    response that cannot be read."""
    data = response.encode("latin-1") if isinstance(response, str) else bytes(response)
    if mechanism == "PLAIN":
        return _plain(data)
    if mechanism == "AMQPLAIN":
        return _amqplain(data)
    raise connection_error(ACCESS_REFUSED, f"unsupported authentication mechanism '{mechanism}'")


def _refused(why: str) -> AmqpError:
    return connection_error(ACCESS_REFUSED, f"{why}; the credentials could not be read")


def _plain(data: bytes) -> Credentials:
    parts = data.split(b"\0")
    if len(parts) != 3:
        raise _refused("a PLAIN response is authzid, user and password separated by NUL")
    try:
        authzid, user, password = (part.decode() for part in parts)
    except UnicodeDecodeError:
        raise _refused("a PLAIN response is UTF-8") from None
    if authzid not in ("", user):
        raise connection_error(ACCESS_REFUSED, f"user '{user}' may not act as '{authzid}'")
    return Credentials(user, password)


def _amqplain(data: bytes) -> Credentials:
    try:
        _, table = decode.field_table(struct.pack(">I", len(data)) + data)
    except (UnmarshalingException, ValueError, struct.error, IndexError) as exc:
        raise _refused(f"an AMQPLAIN response is a field table ({exc})") from None
    user, password = table.get("LOGIN"), table.get("PASSWORD")
    if isinstance(user, bytes):
        user = user.decode(errors="replace")
    if isinstance(password, bytes):
        password = password.decode(errors="replace")
    if not isinstance(user, str) or not isinstance(password, str):
        raise _refused("an AMQPLAIN response names LOGIN and PASSWORD as strings")
    return Credentials(user, password)
