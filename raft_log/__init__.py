"""Our own Raft: a pure consensus core per group (RaftNode, Ready batches) and durable RocksDB storage.

Imports only the standard library, msgpack and rocksdict (never queue_state or above).
"""
