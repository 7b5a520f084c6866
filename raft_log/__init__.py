"""Our own Raft: a pure consensus core per group (RaftNode, Ready batches) at the root, its durable
RocksDB storage in `storage/`, and what tests and simulations drive them with in `testing/`.

Imports only the standard library, msgpack and rocksdict (never queue_state or above).
"""
