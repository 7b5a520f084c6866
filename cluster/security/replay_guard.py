"""Each node assertion is accepted once: the nonces of accepted assertions are remembered until they
expire, in bounded memory.

A nonce is forgotten only after its assertion has expired (expired assertions are refused anyway), never
earlier to make room: when `capacity` nonces are remembered, further assertions are refused
(`ReplayGuardFull`) until some expire. Only genuine assertions reach the guard, but any authenticated user
makes nodes sign them (each request forwarded to another node is one), so each principal (the user an
assertion names) may hold at most `per_principal` of them: a user whose requests fan out faster than that
has its further forwarded requests refused, and denies no other user (filling the whole guard takes
capacity / per_principal principals at that rate).

The nonces live in memory, so a guard cannot tell whether an assertion issued before it was created
(`since_ms`: the node's start) was used: such an assertion is refused (`IssuedBeforeGuard`), so a
restart does not make captured assertions acceptable again. Assertions are made per request, so only
replays and requests in flight across the restart are refused, and those the caller may retry; a peer
whose clock is behind ours by d ms also sees its first d ms of assertions after our start refused.
"""

from __future__ import annotations

from collections import Counter

from cluster.security.peer_auth import ASSERTION_TTL_MS

MAX_REMEMBERED_NONCES = 250_000  # ~35 MiB; an assertion lives at most 2 minutes (see verify_assertion)
MAX_NONCES_PER_PRINCIPAL = 50_000  # ~830 requests a second forwarded to one node for one user, for 60 s


class ReplayGuardFull(Exception):
    """As many nonces as the guard holds, or as it holds for one principal, are still within their
    assertions' validity."""


class IssuedBeforeGuard(Exception):
    """The assertion was issued before the guard started remembering nonces: whether it was used
    cannot be told."""


class ReplayGuard:
    """The nonces seen within their validity: a set for lookups, per-second lists for forgetting, and how
    many each principal holds."""

    def __init__(
        self,
        since_ms: int,
        capacity: int = MAX_REMEMBERED_NONCES,
        per_principal: int = MAX_NONCES_PER_PRINCIPAL,
    ) -> None:
        self.since_ms = since_ms
        self.capacity = capacity
        self.per_principal = per_principal
        self._seen: set[bytes] = set()
        self._held: Counter[str] = Counter()  # nonces remembered per principal
        self._forget_at: dict[int, list[tuple[bytes, str]]] = {}  # a second after which these expired
        self._swept_s = -1

    def __len__(self) -> int:
        return len(self._seen)

    def first_use(self, nonce: bytes, expires_ms: int, now_ms: int, *, by: str) -> bool:
        """True the first time `nonce` (of an assertion for principal `by`, valid until `expires_ms`) is
        seen; False for a replay, or for one already expired by the latest time the guard was given (it
        may have forgotten the nonce; a `now_ms` older than that reading, as another thread's, proves
        nothing).
        Raises ReplayGuardFull when it cannot remember one more (for `by`, or at all), IssuedBeforeGuard
        when it was issued (by the signer's steady clock) before `since_ms`."""
        if expires_ms - ASSERTION_TTL_MS < self.since_ms:
            raise IssuedBeforeGuard("node assertion made before this node started")
        self._forget_expired(now_ms)
        if nonce in self._seen or _forget_after(expires_ms) <= self._swept_s:
            return False  # used, or expired by a later reading than `now_ms` and maybe forgotten since
        if self._held[by] >= self.per_principal:
            raise ReplayGuardFull(
                f"{self._held[by]} node assertions for {by!r} are still within their validity"
            )
        if len(self._seen) >= self.capacity:
            raise ReplayGuardFull(f"{len(self._seen)} node assertions are still within their validity")
        self._seen.add(nonce)
        self._held[by] += 1
        self._forget_at.setdefault(_forget_after(expires_ms), []).append((nonce, by))
        return True

    def _forget_expired(self, now_ms: int) -> None:
        now_s = now_ms // 1000
        if now_s <= self._swept_s:  # a caller's reading older than another's: nothing more expired
            return
        self._swept_s = now_s
        for second in [s for s in self._forget_at if s <= now_s]:
            for nonce, by in self._forget_at.pop(second):
                self._seen.discard(nonce)
                self._held[by] -= 1
                if not self._held[by]:
                    del self._held[by]


def _forget_after(expires_ms: int) -> int:
    """The second from which a nonce valid until `expires_ms` is forgotten (once it is swept)."""
    return expires_ms // 1000 + 1
