"""The node's data directory: its record (`node_record`), files that survive a power failure
(`durable_files`), and the database's checks: the read of every block while serving (`store_check`) and
damage set aside, recorded and reported (`store_damage`). The Raft log's own storage is
`raft_log/storage/`.
"""
