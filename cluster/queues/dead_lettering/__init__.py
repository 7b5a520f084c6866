"""Dead-lettering: moving the messages a queue dead-letters to its target queue.

At most once, the source leader publishes the `DeadLetter` effects of its state machine and forgets
them; at least once, a worker beside the source's leader checks pending dead letters out, publishes them
with confirms and only then settles them (`worker.py`). The package depends on narrow protocols (the
source queue's dead-letter methods, a `ConfirmedPublisher`, a `RemotePublisher` the server layer
provides), never on `Node`; docs/internals/dead_lettering.md tells the rules.
"""
