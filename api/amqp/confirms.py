"""Publisher confirms on one channel: the delivery tags of its publishes, and the acks and nacks that
settle them, with `multiple` wherever one frame can say it.

After `confirm.select` each publish on the channel takes the next tag, from 1. A publish is confirmed
(`basic.ack`) once quorumq answered it 201 (a majority of its queue's replicas committed it and the
leader applied it), or refused (`basic.nack`) once quorumq refused it for certain. Publishes settle in
any order; a frame with `multiple` settles every tag up to its own that is not settled yet, so one is
sent only when every tag below the settled run is settled already, and the run shares one outcome.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Confirm:
    """One `basic.ack` (`ack`) or `basic.nack` frame's fields."""

    delivery_tag: int
    multiple: bool
    ack: bool


class ConfirmTags:
    """The tags of one channel in confirm mode: which are taken, and which are settled."""

    def __init__(self) -> None:
        self._next = 1
        self._settled_below = 1  # every tag below this one is settled
        self._settled_above: set[int] = set()  # settled tags at or above it

    def take(self, count: int = 1) -> range:
        """The tags of the next `count` publishes."""
        tags = range(self._next, self._next + count)
        self._next += count
        return tags

    @property
    def unsettled(self) -> int:
        """How many taken tags are not settled yet."""
        return self._next - self._settled_below - len(self._settled_above)

    def settle(self, tags: range, ack: bool) -> list[Confirm]:
        """The frames that settle `tags` (taken, not settled yet, consecutive): one with `multiple` when
        every tag below them is settled already, else one per tag."""
        if not tags:
            return []
        if tags.start < self._settled_below or tags.stop > self._next or self._settled_above & set(tags):
            raise ValueError(f"tags {tags.start}..{tags.stop - 1} are not all taken and unsettled")
        if tags.start == self._settled_below:
            frames = [Confirm(tags[-1], len(tags) > 1, ack)]
            self._settled_below = tags.stop
            while self._settled_below in self._settled_above:
                self._settled_above.discard(self._settled_below)
                self._settled_below += 1
            return frames
        self._settled_above.update(tags)
        return [Confirm(tag, False, ack) for tag in tags]
