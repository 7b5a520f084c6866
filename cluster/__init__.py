"""The node runtime: metadata group, one Raft group per queue, peer transport, group commit, timers.

Imports raft_log and queue_state; never api, cli or spark_io.
"""
