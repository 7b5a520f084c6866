"""The Raft log's storage: the node's one RocksDB database holding every group (`node_store`: `NodeStore`
and its `GroupLog`s, one write and one fsync for all of them), the key-value `database` it needs and its
RocksDB implementation (`rocksdb_database`), the key layout (`keys`) and the checksummed values
(`records`), and `memory_storage`, a `LogStorage` in memory for tests and the core's simulation.

Imports the core's plain data (`raft_log.types`); the core imports nothing of it.
"""
