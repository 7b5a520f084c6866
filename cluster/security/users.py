"""Users (`metadata_state.records.UserRecord`, replicated in the metadata group): salted scrypt
password hashes, tags, permissions.

Hashing happens where the request arrives (it is slow and salted with fresh randomness); the metadata
group only records the resulting hash, so applying a user command stays deterministic.
Permissions follow RabbitMQ: three regular expressions on queue names (configure, write, read), each
matching a whole name (as if anchored `^...$`; `alice-` does not grant `alice-1`, `alice-.*` does), and
run by RE2, whose matching time is linear in the name: no pattern can stall the event loop.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import logging
import os
import re

import re2

from metadata_state.records import ADMINISTRATOR

log = logging.getLogger(__name__)

GUEST = "guest"
USER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@\-]{0,63}")  # full-matched: no trailing newline
KNOWN_TAGS = frozenset({ADMINISTRATOR, "monitoring"})
MAX_PASSWORD_BYTES = 1024
MAX_PATTERN_LENGTH = 1024
PATTERNS_CACHED = 1024
GRANTS_CACHED = 16384  # (pattern, queue) pairs
RE2_OPTIONS = re2.Options()
RE2_OPTIONS.log_errors = False

SCRYPT_N = 2**17  # OWASP's recommendation for scrypt: N=2^17, r=8, p=1 (128 MiB, ~0.5 s per hash)
SCRYPT_R = 8
SCRYPT_P = 1
SCRYPT_MAX_MEMORY = 2 * 128 * SCRYPT_N * SCRYPT_R  # a stored hash needing more is refused, not computed
SALT_BYTES = 16
HASH_BYTES = 32


class UserError(ValueError):
    """A user name, tag, password or permission pattern is not acceptable."""


def hash_password(password: str, *, salt: bytes | None = None) -> str:
    """`scrypt$N$r$p$salt$hash` (base64 parts) of a password, with a fresh random salt by default."""
    check_password(password)
    salt = os.urandom(SALT_BYTES) if salt is None else salt
    return _encoded(salt, _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P))


def unusable_hash() -> str:
    """A well-formed hash at the current cost that no password matches: checking a password against it
    costs what checking a real one does (for users that do not exist)."""
    return _encoded(os.urandom(SALT_BYTES), os.urandom(HASH_BYTES))


def _encoded(salt: bytes, digest: bytes) -> str:
    return "$".join(("scrypt", str(SCRYPT_N), str(SCRYPT_R), str(SCRYPT_P), _b64(salt), _b64(digest)))


def verify_password(password: str, encoded: str) -> bool:
    """True when `password` matches an encoded hash, whatever scrypt cost it was made with (hashes made
    before the cost was raised keep verifying); False for a wrong password or a malformed hash."""
    try:
        scheme, n, r, p, salt, digest = encoded.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest, validate=True)
        actual = _scrypt(password, base64.b64decode(salt, validate=True), int(n), int(r), int(p))
    except (ValueError, binascii.Error, MemoryError):
        return False
    return hmac.compare_digest(actual, expected)


def password_generation(encoded: str) -> str:
    """A short fingerprint of a stored hash: tokens carry it, so changing the password revokes them."""
    return hashlib.sha256(encoded.encode()).hexdigest()[:16]


def check_user_name(name: object) -> str:
    """A valid user name, or UserError."""
    if not isinstance(name, str) or not USER_NAME.fullmatch(name):
        raise UserError("user names are 1-64 characters of letters, digits, '.', '_', '@' or '-'")
    return name


def check_password(password: object) -> str:
    """A non-empty password of bounded size, or UserError."""
    if not isinstance(password, str) or not password or len(password.encode()) > MAX_PASSWORD_BYTES:
        raise UserError(f"password must be a non-empty string of at most {MAX_PASSWORD_BYTES} bytes")
    return password


def check_tags(tags: object) -> list[str]:
    """A list of known tags, or UserError."""
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise UserError("tags must be a list of strings")
    unknown = sorted(set(tags) - KNOWN_TAGS)
    if unknown:
        raise UserError(f"unknown tags {unknown}; known: {sorted(KNOWN_TAGS)}")
    return sorted(set(tags))


def check_pattern(what: str, pattern: object) -> str:
    """A permission regex RE2 compiles, or UserError (the empty pattern grants nothing)."""
    if not isinstance(pattern, str) or len(pattern) > MAX_PATTERN_LENGTH:
        raise UserError(f"{what} must be a regular expression of at most {MAX_PATTERN_LENGTH} characters")
    try:
        re2.compile(pattern, options=RE2_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise UserError(
            f"{what} is not a regular expression RE2 accepts (no backreferences or lookaround): {reason}"
        ) from exc
    return pattern


@functools.lru_cache(maxsize=PATTERNS_CACHED)
def compiled_pattern(pattern: str) -> re2._Regexp | None:
    """`pattern` compiled by RE2; None when RE2 refuses it (a pattern stored before RE2 checked them)."""
    try:
        return re2.compile(pattern, options=RE2_OPTIONS)
    except re2.error:
        log.warning("pattern %r is not valid for RE2 and matches nothing; set it again", pattern)
        return None


@functools.lru_cache(maxsize=GRANTS_CACHED)
def pattern_allows(pattern: str, queue: str) -> bool:
    """Whether `pattern` grants `queue`: the empty pattern nothing, any other the names it matches whole.
    Remembered: every request checks one, and a match through RE2's bindings costs more than the lookup."""
    if not pattern:
        return False
    compiled = compiled_pattern(pattern)
    return compiled is not None and compiled.fullmatch(queue) is not None


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(
        password.encode(), salt=salt, n=n, r=r, p=p, maxmem=SCRYPT_MAX_MEMORY, dklen=HASH_BYTES
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
