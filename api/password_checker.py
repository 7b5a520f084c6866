"""Password checks for logins: scrypt off the event loop, a few at a time, successes remembered."""

from __future__ import annotations

import asyncio
import hashlib
import os

from cluster.security.users import hash_password, unusable_hash, verify_password
from metadata_state.records import UserRecord

PASSWORD_CHECKS_AT_ONCE = 2
VERIFIED_CACHE_SIZE = 4096


class PasswordChecker:
    """Hashes and checks passwords with scrypt off the event loop, PASSWORD_CHECKS_AT_ONCE at a time
    (each takes 128 MiB), remembering successes.

    Remembered successes are keyed by a keyed BLAKE2b (with a per-process key) of the name, the stored
    hash and the password, so a changed password or a new hash never matches an old entry. A user that
    does not exist costs the same scrypt as one that does (checked against an unusable hash), so the time
    of a failure does not tell which user names exist. Checks of the same credentials at the same time share
    one scrypt (`in_progress`).
    """

    def __init__(self) -> None:
        self._key = os.urandom(32)
        self._verified: set[bytes] = set()
        self._slots = asyncio.Semaphore(PASSWORD_CHECKS_AT_ONCE)
        self._unusable = unusable_hash()
        self._checking: dict[bytes, asyncio.Future[bool]] = {}

    async def hash(self, password: str) -> str:
        """A new hash of `password` (`cluster.security.users.hash_password`)."""
        async with self._slots:
            return await asyncio.get_running_loop().run_in_executor(None, hash_password, password)

    async def known_outcome(self, record: UserRecord, password: str) -> bool | None:
        """Whether `password` is the user's, when that needs no check of its own: remembered from an
        earlier check, or shared with a check of the same credentials under way (None: check it)."""
        fingerprint = self._fingerprint(record, password)
        if fingerprint in self._verified:
            return True
        shared = self._checking.get(fingerprint)
        if shared is None:
            return None
        try:
            return await asyncio.shield(shared)
        except asyncio.CancelledError:
            if not shared.cancelled():
                raise  # the waiting request was cancelled, not the check it waited on
            return None

    async def check(self, record: UserRecord | None, password: str) -> bool:
        """True when `password` is the user's; False, at the same cost, when there is no such user."""
        if record is None:
            await self._verify(password, self._unusable)
            return False
        fingerprint = self._fingerprint(record, password)
        if fingerprint in self._verified:
            return True
        outcome = self._checking[fingerprint] = asyncio.get_running_loop().create_future()
        try:
            ok = await self._verify(password, record.password_hash)
            outcome.set_result(ok)
        finally:
            del self._checking[fingerprint]
            if not outcome.done():  # cut short: those waiting check again for themselves
                outcome.cancel()
        if ok:
            if len(self._verified) >= VERIFIED_CACHE_SIZE:
                self._verified.clear()
            self._verified.add(fingerprint)
        return ok

    def _fingerprint(self, record: UserRecord, password: str) -> bytes:
        material = "\x00".join((record.name, record.password_hash, password)).encode()
        return hashlib.blake2b(material, key=self._key, digest_size=32).digest()  # under half of HMAC's CPU

    async def _verify(self, password: str, encoded: str) -> bool:
        async with self._slots:
            return await asyncio.get_running_loop().run_in_executor(None, verify_password, password, encoded)
