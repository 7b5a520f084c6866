"""Queues on the node: each queue's group, from its door to its replica, and the work beside it.

`queue_door` is a queue's one door (typed methods, results in `queue_results`, consumers in
`consumer_sessions` and `consumer_names`, stamped by `leader_clock`), `queue_replica` the application
of its group with its `bodies`, `queue_hosting` the groups this node hosts, `queue_directory` finding,
declaring and deleting queues, `placement` and `policies` decided from the metadata, `queue_limits`,
`allocator` (giving freed memory back), and the workers beside a queue's leader: `dead_lettering/`
and `redriving/`.
"""
