"""A throwaway CA and a node certificate for 127.0.0.1 and localhost (the openssl recipe of
docs/operate/security.md), as the QUORUMQ_TLS_* settings that make local node processes serve HTTPS and Raft
over TLS: for tests and local trials, never for production."""

from __future__ import annotations

import subprocess
from pathlib import Path


def make_certificates(directory: Path) -> dict[str, str]:
    """Write a CA and one node certificate signed by it into `directory`; return the nodes' TLS env."""
    ca_key, ca_cert = directory / "ca.key", directory / "ca.pem"
    key, csr, cert = directory / "node.key", directory / "node.csr", directory / "node.pem"
    ext = directory / "san.ext"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    commands = [
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca_cert,
         "-days", "2", "-subj", "/CN=quorumq-test-ca"],
        ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=node"],
        ["openssl", "x509", "-req", "-in", csr, "-CA", ca_cert, "-CAkey", ca_key, "-CAcreateserial",
         "-out", cert, "-days", "2", "-extfile", ext],
    ]  # fmt: skip
    for command in commands:
        subprocess.run([str(c) for c in command], check=True, capture_output=True)
    return {
        "QUORUMQ_TLS_CERT": str(cert),
        "QUORUMQ_TLS_KEY": str(key),
        "QUORUMQ_TLS_CA": str(ca_cert),
        "QUORUMQ_TLS_HTTP": "true",
        "QUORUMQ_TLS_RAFT": "true",
    }
