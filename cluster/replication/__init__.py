"""Replication: the Raft host that drives every group of the node and what travels between nodes.

`raft_host` (rounds, one fsync for all groups, send, apply), `proposals` (group commit on a leader),
`transport`, `peer_links` and `peer_requests` (the peer connection, its frames and the requests made
over it), `address_exchange`, the replicated formats' framing (`entry_codec`, `stored_message`,
`unreadable_entry`) and their rolling upgrades (`codec_reads`, `format_versions`), `raft_metrics`.
"""
