"""The secret every node of a cluster shares: given to the node, or generated for a lone node on loopback.

Whoever knows the secret is a superuser: it proves Raft peers to each other and keys the node
assertions and bearer tokens. So a node reachable from elsewhere (any address it binds or advertises
is not loopback) refuses to start unless given a secret of its own (`cluster_secret`, i.e.
`QUORUMQ_CLUSTER_SECRET`, or a file holding it: `QUORUMQ_CLUSTER_SECRET_FILE`, `cluster.config`), and
refuses the published ones (`quorumq-dev-secret`, anything starting `change-me`). A node on loopback without
peers and without a secret generates one, kept in its data directory (mode 0600) so its tokens
survive a restart; nodes with peers must share one (the local harness generates it for its nodes).
"""

from __future__ import annotations

import dataclasses
import os
import secrets
from pathlib import Path
from urllib.parse import urlsplit

from cluster.config import ConfigError, NodeConfig, is_loopback_host
from cluster.store.durable_files import make_directory, write_durably

SECRET_FILE = "cluster_secret"
PUBLIC_SECRETS = frozenset({"quorumq-dev-secret"})
PUBLIC_PREFIX = "change-me"
GENERATED_BYTES = 32
HOW_TO_SET = (
    "set QUORUMQ_CLUSTER_SECRET (or QUORUMQ_CLUSTER_SECRET_FILE, a file holding it) to the same "
    "random value on every node, e.g. $(openssl rand -hex 32)"
)


def is_public_secret(secret: str) -> bool:
    """True for a secret published in this project's files (a default or an example)."""
    return secret in PUBLIC_SECRETS or secret.startswith(PUBLIC_PREFIX)


def exposed_addresses(config: NodeConfig) -> list[str]:
    """The addresses the node binds or advertises that are not loopback."""
    hosts = [config.http.host, config.raft.host]
    if config.advertise_raft is not None:
        hosts.append(config.advertise_raft.host)
    if config.advertise_http:
        hosts.append(urlsplit(config.advertise_http).hostname or config.advertise_http)
    return [host for host in dict.fromkeys(hosts) if not is_loopback_host(host)]


def settle_cluster_secret(config: NodeConfig) -> NodeConfig:
    """`config` with the secret the node must use, or ConfigError when it may not start."""
    secret = config.cluster_secret
    exposed = exposed_addresses(config)
    where = f"node {config.node} is reachable off loopback ({', '.join(exposed)})"
    if secret:
        if exposed and is_public_secret(secret):
            raise ConfigError(f"{where} and its cluster secret is a public value; {HOW_TO_SET}")
        return config
    if exposed:
        raise ConfigError(f"{where} and has no cluster secret of its own; {HOW_TO_SET}")
    if config.join or any(seed.name != config.node for seed in config.seeds):
        raise ConfigError(f"nodes of a cluster share a secret and node {config.node} has none; {HOW_TO_SET}")
    return dataclasses.replace(config, cluster_secret=_generated_secret(Path(config.data_dir)))


def _generated_secret(data_dir: Path) -> str:
    """The secret kept in the data directory, generated on the first start."""
    path = data_dir / SECRET_FILE
    if not path.exists():
        make_directory(data_dir)
        write_durably(path, secrets.token_hex(GENERATED_BYTES), mode=0o600)
    if os.stat(path).st_mode & 0o077:
        raise ConfigError(f"{path} must be readable by its owner only (chmod 600)")
    return path.read_text()
