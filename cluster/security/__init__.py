"""Security: who may talk to a node and what they may do.

The cluster secret (`cluster_secret`) and TLS (`tls`), the assertions nodes sign for each other
(`peer_auth`, accepted once: `replay_guard`), the bounds on connections still to authenticate
(`pending_handshakes`, counted per `source_address`), and users with their permissions (`users`).
"""
