"""The node runtime: metadata group, one Raft group per queue, peer transport, group commit, timers.

Imports raft_log, queue_state and metadata_state; never api, cli or spark_io.
"""
