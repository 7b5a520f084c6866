"""Which consumer a caller names: its own, or any for an administrator (`cluster.queues.consumer_names`).

A consumer's tag names the user who registered it, and a durable consumer's name is stored with its
owner's (`NAME~OWNER`), so its owner goes on naming it `NAME`, and another user naming `NAME` names a
consumer of its own. A name of another user's consumer is answered as one that does not exist (404), so
a refusal tells nothing. A name without an owner was registered by an earlier version: it stays usable
by whoever may read the queue, as it was, until that consumer ends.
"""

from __future__ import annotations

from api.access import Principal
from cluster.errors import UnknownConsumer
from cluster.queues.consumer_names import owned, owner_of
from cluster.queues.queue_door import QueueDoor


def own_consumer(queue: QueueDoor, caller: Principal, name: str) -> str:
    """The name in `queue`'s state of the consumer `caller` calls `name`; UnknownConsumer when that is
    another user's and `caller` is no administrator."""
    owner = owner_of(name)
    if owner is not None:
        if owner != caller.name and not caller.administrator:
            raise UnknownConsumer(f"no consumer '{name}' on queue '{queue.name}'")
        return name
    if queue.has_consumer(name):  # of no owner: an earlier version's
        return name
    return owned(name, caller.name)
