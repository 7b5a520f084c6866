"""The AMQP 0-9-1 edge of a node (issue 42; the plan: docs/internals/design-amqp.md).

What a connection is made of, each in its file: the wire (`frame_io`), the negotiation (`negotiation`),
the credentials (`sasl`), a publish's content (`content`), message properties (`properties`),
publisher confirms (`confirms`) and reply codes (`reply_codes`).
"""
