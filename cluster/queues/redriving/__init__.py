"""Redrive tasks on the node: a worker per running task beside its dead-letter queue's leader."""
