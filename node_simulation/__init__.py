"""The whole-node simulation: real `Node`s in one process on one seed (docs/decisions/0017)."""
