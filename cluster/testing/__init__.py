"""The driver simulation: real `RaftHost` rounds, `NodeStore` and `QueueReplica` over a simulated disk
and network (`simulated_network`), one seed replaying a run exactly (`simulation`). Only tests and the
simulation itself import it; the node never does.
"""
