"""Membership: queue replica sets, nodes joining and forgotten, target group sizes, and the single-server
Raft changes they are made of. It depends on its node through the narrow protocols of `host` and
`join`, never on `Node` itself."""
