"""How one attempt at a request fails below the API's answers, over HTTP or a stream: it could not be sent
(`ConnectFailed`), or it may have been sent and no answer came (`NoAnswer`). quorumq.transport turns them
into retries or errors."""


class ConnectFailed(Exception):
    """No connection could be opened to the node: the request was certainly not sent."""


class NoAnswer(Exception):
    """The request may have been sent but no complete answer came back: `code` says how (e.g. `timeout`,
    `connection_lost`)."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason
