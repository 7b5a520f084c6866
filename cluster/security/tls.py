"""TLS contexts (Python `ssl`) for the HTTP API, the AMQP listener's `amqps` address and the Raft transport,
from certificate paths in config.

Raft connections are mutual TLS: both ends present a certificate signed by the cluster's CA (`tls_ca`);
node names are still proven by the HMAC handshake, so peer certificates are not matched to host names.
HTTP clients of a node (forwarding, node-to-node calls) verify the server against the same CA.
"""

from __future__ import annotations

import ssl

from cluster.config import ConfigError, NodeConfig


def _require_files(config: NodeConfig, what: str) -> None:
    missing = [name for name in ("tls_cert", "tls_key", "tls_ca") if not getattr(config, name)]
    if missing:
        raise ConfigError(f"{what} needs {', '.join(missing)}")


def server_context(config: NodeConfig, *, require_client_cert: bool) -> ssl.SSLContext:
    """A server-side context with this node's certificate (and client certificates required if asked)."""
    _require_files(config, "TLS")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=config.tls_ca)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(config.tls_cert, config.tls_key)
    context.verify_mode = ssl.CERT_REQUIRED if require_client_cert else ssl.CERT_NONE
    return context


def client_context(config: NodeConfig, *, check_hostname: bool) -> ssl.SSLContext:
    """A client-side context trusting the cluster CA and presenting this node's certificate."""
    _require_files(config, "TLS")
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=config.tls_ca)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = check_hostname
    context.load_cert_chain(config.tls_cert, config.tls_key)
    return context


def raft_contexts(config: NodeConfig) -> tuple[ssl.SSLContext, ssl.SSLContext] | None:
    """(server, client) contexts for the Raft port when `tls_raft` is on, else None."""
    if not config.tls_raft:
        return None
    return server_context(config, require_client_cert=True), client_context(config, check_hostname=False)


def http_server_context(config: NodeConfig) -> ssl.SSLContext | None:
    """The HTTP listener's context when `tls_http` is on, else None."""
    return server_context(config, require_client_cert=False) if config.tls_http else None


def http_client_context(config: NodeConfig) -> ssl.SSLContext | None:
    """What a node uses to call another node's HTTPS API (the cluster CA), else None for plain HTTP."""
    return client_context(config, check_hostname=True) if config.tls_http else None


def amqps_server_context(config: NodeConfig) -> ssl.SSLContext:
    """The TLS context of the AMQP listener's `amqps` address (client certificates not asked for)."""
    return server_context(config, require_client_cert=False)
