"""The Jepsen-style fault-injection suite: hosts, workload, nemeses, the total-queue checker and reports.

Drives real node processes and talks to them through api.client; imports nothing of the node internals.
"""
