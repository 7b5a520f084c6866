"""What tests and simulations use to drive the core and its storage: the Raft safety checker
(`invariants`), the deterministic simulation of a group under faults (`simulation`), and a database in
memory with a disk's failure modes (`simulated_database`). The node never imports it.
"""
