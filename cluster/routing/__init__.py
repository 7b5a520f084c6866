"""Routing a publish to queues by exchange and binding (issue 41; the plan: docs/internals/design-routing.md):
the matchers of topic binding keys and of headers bindings, pure and independent of the node."""
