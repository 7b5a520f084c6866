"""The deterministic quorum-queue state machine: commands as data, apply(meta, command) -> (reply,
effects), snapshots.

Pure Python: no I/O, clock or randomness; imports only the standard library and msgpack,
never raft_log or anything above it.
"""
