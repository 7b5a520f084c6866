"""What a client's connections do across fork(): in a forked child they belong to the parent.

A child inherits copies of the parent's sockets and of its event loop's epoll instance, which the two
processes share: a child that closed an inherited connection would unregister it from the parent's epoll
(and, over TLS, send the peer a close_notify in the parent's name). So a child must neither use nor close
them; it leaves them to the parent and opens its own.
"""

import os

import aiohttp

from quorumq.errors import ForkedClientError


class ForkSafeConnector(aiohttp.TCPConnector):
    """A TCPConnector that is closed, as far as any process but its creator can tell.

    In a forked child every path that would use or close the parent's connections (a request, `close()`,
    releasing a connection, the finalizer) sees a closed connector and leaves them alone; the parent's
    view is unchanged."""

    def __init__(self) -> None:
        self._owner_pid = os.getpid()
        self._closed_by_owner = False
        super().__init__()

    @property
    def _closed(self) -> bool:
        """aiohttp's own closed flag, which every use and close of a connection checks first."""
        return self._closed_by_owner or os.getpid() != self._owner_pid

    @_closed.setter
    def _closed(self, closed: bool) -> None:
        self._closed_by_owner = closed


class ProcessOwner:
    """The process a client was created in; `check()` refuses use from any other (a forked child)."""

    def __init__(
        self, what: str, remedy: str = "create a client in the child (a SyncClient does so by itself)"
    ) -> None:
        self.pid = os.getpid()
        self._what = what
        self._remedy = remedy

    def check(self) -> None:
        """Raise ForkedClientError in any process but the creator."""
        if os.getpid() != self.pid:
            raise ForkedClientError(
                f"this {self._what} was created in process {self.pid} and cannot be used in process "
                f"{os.getpid()}, forked from it: its connections belong to the parent; {self._remedy}"
            )
