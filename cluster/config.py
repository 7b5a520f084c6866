"""Node configuration: command-line flags, a TOML file and QUORUMQ_* environment variables."""

from __future__ import annotations

import functools
import ipaddress
import os
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from cluster.dead_lettering.worker import DEFAULT_PREFETCH
from queue_state.arguments import DEFAULT_DELIVERY_LIMIT, ArgumentError, QueueDefaults

ENV_PREFIX = "QUORUMQ_"


class ConfigError(ValueError):
    """A configuration value is missing or malformed."""


@functools.lru_cache(maxsize=1024)
def is_loopback_host(host: str) -> bool:
    """True for a loopback IP address or `localhost` (any other name may resolve anywhere); remembered,
    as the API asks it of the peer of every request that logs in as `guest`."""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Address:
    """A host and a TCP port."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str, *, what: str) -> Address:
        """Parse `HOST:PORT` (IPv6 hosts in brackets)."""
        host, sep, port = text.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(f"{what}: expected HOST:PORT, got {text!r}")
        return cls(host.strip("[]"), int(port))

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class Seed:
    """One member of the initial cluster: `NAME@HOST:RAFTPORT`."""

    name: str
    raft: Address

    @classmethod
    def parse(cls, text: str) -> Seed:
        """Parse `NAME@HOST:RAFTPORT`."""
        name, sep, address = text.partition("@")
        if not sep or not name:
            raise ConfigError(f"seed: expected NAME@HOST:RAFTPORT, got {text!r}")
        return cls(name, Address.parse(address, what="seed"))


@dataclass(frozen=True)
class NodeConfig:
    """Everything a node needs to start; timings are in milliseconds."""

    node: str
    data_dir: Path
    http: Address
    raft: Address
    seeds: tuple[Seed, ...] = ()
    join: str | None = None
    cluster_secret: str = ""  # settled by cluster.cluster_secret before a node starts
    cluster_secret_file: str = ""
    tick_ms: int = 100
    election_ticks: int = 5
    heartbeat_ticks: int = 2
    batch_delay_ms: float = 0.0
    snapshot_every_entries: int = 20000
    snapshot_every_bytes: int = 64 * 1024 * 1024  # and at least 4x the group's last snapshot (raft_host)
    consumer_timeout_ms: int = 30 * 60 * 1000
    consumer_idle_timeout_ms: int = 60000
    default_delivery_limit: int = DEFAULT_DELIVERY_LIMIT  # -1: unlimited
    default_group_size: int = 0  # 0: placement's (DEFAULT_GROUP_SIZE)
    default_leader_locator: str = ""  # "": placement's (client-local)
    dead_letter_prefetch: int = DEFAULT_PREFETCH
    max_message_bytes: int = 16 * 1024 * 1024
    max_request_bytes: int = 64 * 1024 * 1024
    advertise_http: str | None = None
    advertise_raft: Address | None = None
    target_group_size: int = 0
    membership_interval_ms: int = 3_600_000
    membership_trigger_delay_ms: int = 10_000
    membership_auto_remove: bool = False
    bootstrap_user: str = ""
    bootstrap_password: str = ""
    loopback_guest: bool = True
    metrics_public: bool = False
    tls_cert: str = ""
    tls_key: str = ""
    tls_ca: str = ""
    tls_http: bool = False
    tls_raft: bool = False
    max_message_headers: int = 128
    max_header_bytes: int = 64 * 1024
    max_queue_name_length: int = 255
    max_consumers_per_queue: int = 1000
    request_read_timeout_ms: int = 30000
    keepalive_timeout_ms: int = 75000
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def http_url(self) -> str:
        """The base URL other nodes and clients use to reach this node's HTTP API."""
        return self.advertise_http or f"{'https' if self.tls_http else 'http'}://{self.http}"

    @property
    def raft_address(self) -> Address:
        """The Raft address other nodes dial: `advertise_raft`, else the one this node listens on."""
        return self.advertise_raft or self.raft

    def queue_defaults(self) -> QueueDefaults:
        """What this node gives a queue declared without those arguments; ConfigError for a bad one."""
        try:
            return QueueDefaults(
                self.default_delivery_limit,
                self.default_group_size or None,
                self.default_leader_locator or None,
            )
        except ArgumentError as exc:
            setting = _DEFAULT_SETTINGS[exc.argument]
            raise ConfigError(f"{setting}: {exc.reason}") from exc

    @property
    def seed_names(self) -> tuple[str, ...]:
        """The names of the initial cluster members."""
        return tuple(seed.name for seed in self.seeds)


_DEFAULT_SETTINGS = {
    "x-delivery-limit": "default_delivery_limit",
    "x-quorum-initial-group-size": "default_group_size",
    "x-queue-leader-locator": "default_leader_locator",
}

_COERCE: dict[str, Callable[[Any], Any]] = {
    "data_dir": Path,
    "http": lambda v: Address.parse(str(v), what="http"),
    "raft": lambda v: Address.parse(str(v), what="raft"),
    "advertise_raft": lambda v: Address.parse(str(v), what="advertise_raft"),
    "seeds": lambda v: tuple(Seed.parse(s) for s in (v.split(",") if isinstance(v, str) else v) if s),
    "membership_auto_remove": lambda v: _flag(v),
    "loopback_guest": lambda v: _flag(v),
    "metrics_public": lambda v: _flag(v),
    "tls_http": lambda v: _flag(v),
    "tls_raft": lambda v: _flag(v),
}


def _flag(value: Any) -> bool:
    """A boolean setting from TOML (a bool) or from a flag or variable (`1`, `true`, `yes`)."""
    return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes")


def load_config(flags: dict[str, Any], config_file: Path | None = None) -> NodeConfig:
    """Merge (lowest to highest precedence) a TOML file, QUORUMQ_* variables and flags."""
    merged: dict[str, Any] = {}
    if config_file is not None:
        try:
            merged.update(tomllib.loads(config_file.read_text()))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"config file {config_file}: {exc}") from exc
    known = {f.name: f for f in fields(NodeConfig)}
    for key, text in os.environ.items():
        if key.startswith(ENV_PREFIX):
            name = key[len(ENV_PREFIX) :].lower()
            if name in known:
                merged[name] = text
    merged.update({k: v for k, v in flags.items() if v not in (None, ())})
    unknown = sorted(set(merged) - set(known))
    if unknown:
        raise ConfigError(f"unknown configuration keys: {', '.join(unknown)}")
    for required in ("node", "data_dir", "http", "raft"):
        if required not in merged:
            raise ConfigError(f"missing required setting {required!r} (flag --{required.replace('_', '-')})")
    values: dict[str, Any] = {}
    for name, value in merged.items():
        coerce = _COERCE.get(name)
        if coerce is not None:
            value = coerce(value)
        elif known[name].type in ("int", "float") and isinstance(value, str):
            try:
                value = int(value) if known[name].type == "int" else float(value)
            except ValueError as exc:
                raise ConfigError(f"{name}: expected a number, got {value!r}") from exc
        values[name] = value
    config = NodeConfig(**values)
    _check_queue_settings(config)
    return config


def _check_queue_settings(config: NodeConfig) -> None:
    """A bad queue default or dead-letter prefetch fails the start, not the first declare (a TOML file
    passes its values through as they are written)."""
    for name, kind in _QUEUE_SETTING_TYPES.items():
        value = getattr(config, name)
        if type(value) is not kind:
            raise ConfigError(f"{name}: must be {'an integer' if kind is int else 'a string'}, got {value!r}")
    config.queue_defaults()
    if config.dead_letter_prefetch < 1:
        raise ConfigError(f"dead_letter_prefetch: must be >= 1, got {config.dead_letter_prefetch}")


_QUEUE_SETTING_TYPES = {
    "default_delivery_limit": int,
    "default_group_size": int,
    "default_leader_locator": str,
    "dead_letter_prefetch": int,
}
