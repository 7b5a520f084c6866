"""Routing a publish to queues by exchange and binding (issue 41; the plan: docs/internals/design-routing.md),
pure and independent of the node: the matchers of topic binding keys and of headers bindings, the content
filters a binding may add (`x-filter`), the routing table that resolves an exchange to its queues by
RabbitMQ's rules, and the checks a declare or a bind passes before it is proposed."""
