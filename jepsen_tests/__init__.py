"""The Jepsen-style fault-injection suite: hosts, workload, nemeses, the total-queue checker and reports.

Drives real node processes and talks to them through the client (quorumq); imports nothing of the
node internals.
"""
