"""NodeWatch: one timer per node that ends the requests waiting on it when their time is up, or when the
node stopped answering at all (docs/decisions/0012-failover-timing.md).

A request registers the future its answer arrives on (`track`) and unregisters it once answered
(`untrack`): a dict entry each, no task or timed wait of its own. The watch's one timer fires at the
earliest moment something may be due: a tracked deadline, or `after` seconds past both the oldest
watched request and the last word from the node (`heard`: any answer or frame). Then, when a watched
request has waited `after` and the node said nothing for as long, the node's health is checked (`probe`,
which answers within `after`); if neither the check nor anything else from the node answered, every
watched request still waiting fails with NoAnswer("unresponsive"). A node that is slow but alive, that
answers other requests or the check, is waited for, and checked again once it has been quiet for
`after` again.
"""

import asyncio
import math
from collections.abc import Awaitable, Callable
from typing import Any

from quorumq.attempt_failures import NoAnswer

UNRESPONSIVE = "unresponsive"


class NodeWatch:
    """The timer of the node at `base`: deadlines of tracked answers, and the unresponsive-node check."""

    def __init__(self, base: str, after: float, probe: Callable[[], Awaitable[bool]]) -> None:
        self.base = base
        self.after = after
        self._probe = probe
        # answer -> (when it was sent, its deadline or inf, whether an unresponsive node fails it)
        self._waiting: dict[asyncio.Future[Any], tuple[float, float, bool]] = {}
        self._heard_at = -math.inf
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf
        self._check: asyncio.Task[None] | None = None

    def track(self, answer: "asyncio.Future[Any]", now: float, deadline: float, watched: bool) -> None:
        """Watch `answer`, a request sent at `now` (the loop's time): fail it with NoAnswer("timeout") at
        `deadline` (inf: never), and when `watched`, with NoAnswer("unresponsive") if the node stops
        answering."""
        self._waiting[answer] = (now, deadline, watched)
        due = min(deadline, now + self.after) if watched else deadline
        if due < self._timer_at:
            self._arm(due)

    def untrack(self, answer: "asyncio.Future[Any]") -> None:
        """Stop watching `answer` (answered, or given up)."""
        self._waiting.pop(answer, None)

    def heard(self, now: float) -> None:
        """The node said something at `now` (the loop's time): it is not frozen."""
        self._heard_at = now

    def close(self) -> None:
        """Stop the timer and any check (the tracked answers are left as they are)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer, self._timer_at = None, math.inf
        if self._check is not None:
            self._check.cancel()  # a task cancelled before it ran skips its finally: forget it here
            self._check = None

    def _arm(self, at: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = at
        self._timer = asyncio.get_running_loop().call_at(at, self._fire)

    def _fire(self) -> None:
        """Fail what is past its deadline, start a check when the node has gone quiet on a watched request,
        and arm the timer for the next thing that may be due."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = None, math.inf
        now = asyncio.get_running_loop().time()
        due = math.inf
        oldest_watched = math.inf
        for answer, (sent, deadline, watched) in list(self._waiting.items()):
            if answer.done():
                continue
            if deadline <= now:
                answer.set_exception(NoAnswer("timeout", f"no answer from {self.base} in time"))
                continue
            due = min(due, deadline)
            if watched:
                oldest_watched = min(oldest_watched, sent)
        if oldest_watched < math.inf and self._check is None:
            quiet_since = max(oldest_watched, self._heard_at)
            if now - quiet_since >= self.after:
                self._check = asyncio.ensure_future(self._checked(now))
            else:
                due = min(due, quiet_since + self.after)
        if due < math.inf:
            self._arm(due)

    async def _checked(self, began: float) -> None:
        """Check the node's health; fail the watched requests when neither the check nor anything else
        from the node answered; then look again at what is due."""
        try:
            answered = await self._probe()
        except Exception:  # a check that fails in any way got no answer
            answered = False
        finally:
            self._check = None
        loop = asyncio.get_running_loop()
        if answered:
            self.heard(loop.time())
        elif self._heard_at < began:
            reason = f"{self.base} answered neither the request nor a health check"
            for answer, (_, _, watched) in list(self._waiting.items()):
                if watched and not answer.done():
                    answer.set_exception(NoAnswer(UNRESPONSIVE, reason))
        self._fire()
