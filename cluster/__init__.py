"""The node runtime: metadata group, one Raft group per queue, peer transport, group commit, timers.

Wings: `replication/` (the Raft host, transport, proposals, the replicated formats' framing), `queues/`
(each queue's door, replica and workers), `metadata/` (the metadata group's runtime side), `security/`,
`store/` (the data directory beside the log), `membership/`, `testing/` (the driver simulation). Here:
`node` wires them, with the node's environment, status, logging, config, errors, hosts and clock.

Imports raft_log, queue_state and metadata_state; never api, cli or spark_io.
"""
