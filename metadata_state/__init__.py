"""The metadata group's state machine: the node registry, queues with their replica sets, users.

Pure and deterministic like `queue_state`: `commands` are frozen records, `machine.MetadataMachine`
applies one and returns a typed reply (`replies`), `codec` is their versioned wire form (version-0 raw
lists still decode), `snapshot` the versioned snapshot of `records` (the versions only read frozen in
`legacy_formats`). Imports nothing of the node.
"""
