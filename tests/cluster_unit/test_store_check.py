"""StoreCheck (decision 0016): how it ends when a step fails for a reason other than damage."""

import logging

import pytest

from cluster.store.store_check import StoreCheck


async def test_rule_a_failed_store_check_says_so_and_is_not_done(caplog: pytest.LogCaptureFixture) -> None:
    steps = iter([(b"k1", 5_000_000)])

    def read_through(after: bytes | None, max_bytes: int) -> tuple[bytes | None, int]:
        step = next(steps, None)
        if step is None:
            raise OSError("the store was closed")
        return step

    check = StoreCheck(read_through)
    with caplog.at_level(logging.ERROR, logger="cluster.store.store_check"), pytest.raises(OSError):
        await check.run()
    assert (check.done, check.checked_bytes) == (False, 5_000_000)
    assert "store check stopped after 5 MB read" in caplog.text
