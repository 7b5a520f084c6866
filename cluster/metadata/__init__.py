"""The metadata group on the node: its application (`metadata_app`), the one place commands are proposed
(`metadata_door`), what this node applied, read-only (`metadata_view`), and whether it has replayed its
log since it started (`metadata_replay`). The pure machine they run is `metadata_state`.
"""
