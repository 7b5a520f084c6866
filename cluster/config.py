"""Node configuration: command-line flags, a TOML file and QUORUMQ_* environment variables."""

from __future__ import annotations

import difflib
import functools
import ipaddress
import logging
import math
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import MISSING, Field, dataclass, field, fields
from pathlib import Path
from typing import Any

from cluster.queues.dead_lettering.worker import DEFAULT_PREFETCH
from queue_state.arguments import DEFAULT_DELIVERY_LIMIT, ArgumentError, QueueDefaults

ENV_PREFIX = "QUORUMQ_"
CLIENT_VARIABLES = frozenset({"NODES", "USER", "PASSWORD", "TOKEN", "CA_FILE", "HEALTHCHECK_INTERVAL"})
"""QUORUMQ_* variables the CLIs, the client and the compose files read: no node setting, no warning."""
FILE_SUFFIX = "_file"

log = logging.getLogger(__name__)


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
        if not sep or not host or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
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


_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "k": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gib": 1024**3,
    "t": 1024**4,
    "tib": 1024**4,
}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*")
MEM_RELATIVE = "mem_relative:"


@dataclass(frozen=True)
class ResourceLimit:
    """A limit in bytes, as RabbitMQ writes `disk_free_limit` and `vm_memory_high_watermark`: `absolute`
    bytes, or `relative` times the memory the node may use."""

    absolute: int = 0
    relative: float = 0.0

    @classmethod
    def disk(cls, text: str) -> ResourceLimit:
        """`disk_free_limit`: a size (`50MB`, `2GiB`, `1000000`) or `mem_relative:FACTOR`."""
        text = str(text).strip()
        if text.startswith(MEM_RELATIVE):
            return cls(relative=_factor(text.removeprefix(MEM_RELATIVE), "disk_free_limit"))
        return cls(absolute=_size(text, "disk_free_limit"))

    @classmethod
    def memory(cls, text: str) -> ResourceLimit:
        """`vm_memory_high_watermark`: a fraction of memory (`0.4`, or `mem_relative:0.4`) or a size
        (`2GB`, `2000000000`)."""
        text = str(text).strip()
        if text.startswith(MEM_RELATIVE):
            return cls(relative=_factor(text.removeprefix(MEM_RELATIVE), "vm_memory_high_watermark"))
        try:
            fraction = float(text)
        except ValueError:
            return cls(absolute=_size(text, "vm_memory_high_watermark"))
        if not 0 < fraction <= 1:
            raise ConfigError(
                f"vm_memory_high_watermark: a fraction of memory is above 0 and at most 1; a size needs a "
                f"unit (2GB), got {text!r}"
            )
        return cls(relative=fraction)

    def bytes_of(self, memory_total: int) -> int:
        """The limit in bytes on a node that may use `memory_total` bytes of memory."""
        return int(self.relative * memory_total) if self.relative else self.absolute

    def __str__(self) -> str:
        if self.relative:
            return f"{MEM_RELATIVE}{self.relative:g}"
        return str(self.absolute)


def _size(text: str, what: str) -> int:
    matched = _SIZE.fullmatch(text)
    unit = _UNITS.get(matched.group(2).lower()) if matched else None
    if matched is None or unit is None or (unit == 1 and "." in matched.group(1)):
        raise ConfigError(f"{what}: expected a size such as 50MB, 2GiB or 1000000, got {text!r}")
    return int(float(matched.group(1)) * unit)


def _factor(text: str, what: str) -> float:
    try:
        factor = float(text)
    except ValueError:
        factor = -1.0
    if not 0 < factor < math.inf:
        raise ConfigError(f"{what}: expected a positive factor after {MEM_RELATIVE}, got {text!r}")
    return factor


def about(help: str, *, minimum: float | None = None, secret: bool = False) -> dict[str, Any]:
    """A `NodeConfig` field's metadata: what `quorumq server --help` says of it, the least value it
    takes, and whether it is a secret (then `QUORUMQ_<NAME>_FILE` may name a file holding it)."""
    return {"help": help, "minimum": minimum, "secret": secret}


@dataclass(frozen=True)
class NodeConfig:
    """Everything a node needs to start; timings are in milliseconds. `cluster_secret` is settled by
    `cluster.security.cluster_secret` before a node starts."""

    node: str = field(metadata=about("This node's name, unique in the cluster (required)."))
    data_dir: Path = field(metadata=about("Where the node keeps its data (required)."))
    http: Address = field(metadata=about("HOST:PORT the HTTP API listens on (required)."))
    raft: Address = field(metadata=about("HOST:PORT Raft traffic between nodes listens on (required)."))
    seeds: tuple[Seed, ...] = field(
        default=(), metadata=about("The initial members, NAME@HOST:RAFTPORT, comma-separated.")
    )
    join: str | None = field(
        default=None, metadata=about("http://HOST:PORT of a running member to join the cluster through.")
    )
    amqp: Address | None = field(
        default=None,
        metadata=about("HOST:PORT the AMQP 0-9-1 listener serves on (none: no listener; RabbitMQ: 5672)."),
    )
    amqps: Address | None = field(
        default=None,
        metadata=about("HOST:PORT the AMQP listener serves over TLS on, with tls_cert (RabbitMQ: 5671)."),
    )
    cluster_secret: str = field(
        default="",
        metadata=about(
            "The secret every node of the cluster shares (generated for a lone node on loopback).",
            secret=True,
        ),
    )
    tick_ms: int = field(
        default=100, metadata=about("The Raft tick: heartbeats and elections count in ticks.", minimum=1)
    )
    election_ticks: int = field(
        default=5, metadata=about("Ticks without a leader before a follower stands.", minimum=2)
    )
    heartbeat_ticks: int = field(default=2, metadata=about("Ticks between a leader's heartbeats.", minimum=1))
    stop_hand_over_ms: int = field(
        default=10_000,
        metadata=about(
            "How long a node told to stop waits for the groups it leads to hand leadership to other "
            "members (0: it stops at once, and they elect leaders after a timeout).",
            minimum=0,
        ),
    )
    batch_delay_ms: float = field(
        default=0.0, metadata=about("How long a leader waits to gather proposals into one entry.", minimum=0)
    )
    max_unapplied_proposals: int = field(
        default=50_000,
        metadata=about(
            "Operations a queue's leader holds not yet applied (proposed, or waiting to be) before it "
            "refuses publishes with 503 overloaded.",
            minimum=1,
        ),
    )
    max_unapplied_proposal_bytes: int = field(
        default=64 * 1024 * 1024,
        metadata=about(
            "Encoded bytes of those operations before a queue's leader refuses publishes with 503 "
            "overloaded.",
            minimum=1,
        ),
    )
    snapshot_every_entries: int = field(
        default=20000, metadata=about("Entries between a group's snapshots.", minimum=1)
    )
    snapshot_every_bytes: int = field(
        default=64 * 1024 * 1024,
        metadata=about("Log bytes between a group's snapshots (at least 4x its last snapshot).", minimum=1),
    )
    consumer_timeout_ms: int = field(
        default=30 * 60 * 1000,
        metadata=about("How long a delivery may be held without an ack, nack or touch.", minimum=1),
    )
    consumer_idle_timeout_ms: int = field(
        default=60000,
        metadata=about(
            "How long a consumer may go unheard (no poll, ack, nack or touch) before it ends and what it "
            "holds returns.",
            minimum=1,
        ),
    )
    default_delivery_limit: int = field(
        default=DEFAULT_DELIVERY_LIMIT,
        metadata=about("x-delivery-limit of a queue declared without one (-1: none)."),
    )
    default_group_size: int = field(
        default=0, metadata=about("Replicas of a queue declared without a size (0: placement's, 3).")
    )
    default_leader_locator: str = field(
        default="",
        metadata=about("x-queue-leader-locator of a queue declared without one (client-local or balanced)."),
    )
    dead_letter_prefetch: int = field(
        default=DEFAULT_PREFETCH,
        metadata=about("Dead letters the at-least-once worker moves at once.", minimum=1),
    )
    max_message_bytes: int = field(
        default=16 * 1024 * 1024, metadata=about("The largest message body.", minimum=1)
    )
    max_request_bytes: int = field(
        default=64 * 1024 * 1024, metadata=about("The largest HTTP request body.", minimum=1)
    )
    advertise_http: str | None = field(
        default=None, metadata=about("The HTTP URL other nodes use to reach this one.")
    )
    allowed_hosts: tuple[str, ...] = field(
        default=(),
        metadata=about(
            "Further names clients reach the HTTP API by (the Host header), comma-separated; '*': any "
            "(the advertised name, localhost and IP addresses are always answered)."
        ),
    )
    advertise_raft: Address | None = field(
        default=None, metadata=about("HOST:PORT other nodes dial for Raft (default: raft).")
    )
    target_group_size: int = field(
        default=0, metadata=about("Replicas every queue is grown or shrunk to (0: off).", minimum=0)
    )
    membership_interval_ms: int = field(
        default=3600000,
        metadata=about("How often leaders check their queue's replicas against the target.", minimum=1),
    )
    membership_trigger_delay_ms: int = field(
        default=10000, metadata=about("How long after a node joins or leaves that check runs.", minimum=0)
    )
    membership_auto_remove: bool = field(
        default=False, metadata=about("Leaders drop replicas on nodes that left the cluster.")
    )
    bootstrap_user: str = field(
        default="", metadata=about("An administrator created at the first start.", secret=True)
    )
    bootstrap_password: str = field(default="", metadata=about("The bootstrap user's password.", secret=True))
    loopback_guest: bool | None = field(
        default=None,
        metadata=about(
            "guest/guest may log in, from loopback only (unset: until a bootstrap user is configured or "
            "an administrator exists)."
        ),
    )
    metrics_public: bool = field(default=False, metadata=about("/metrics answers without credentials."))
    tls_cert: str = field(default="", metadata=about("The node's TLS certificate (PEM file)."))
    tls_key: str = field(default="", metadata=about("The certificate's private key (PEM file)."))
    tls_ca: str = field(default="", metadata=about("The CA bundle peers' certificates are checked against."))
    tls_http: bool = field(default=False, metadata=about("Serve the HTTP API over TLS."))
    tls_raft: bool = field(default=False, metadata=about("Raft traffic over mutual TLS."))
    max_message_headers: int = field(default=128, metadata=about("Headers a message may carry.", minimum=0))
    max_header_bytes: int = field(
        default=64 * 1024, metadata=about("Bytes a message's headers may take.", minimum=0)
    )
    max_queue_name_length: int = field(default=255, metadata=about("The longest queue name.", minimum=1))
    max_consumers_per_queue: int = field(
        default=1000, metadata=about("Consumers a queue accepts.", minimum=1)
    )
    max_exchanges: int = field(
        default=10_000, metadata=about("Exchanges the cluster accepts (beside the built-in ones).", minimum=0)
    )
    max_bindings: int = field(
        default=100_000, metadata=about("Bindings the cluster accepts, of every exchange.", minimum=0)
    )
    request_read_timeout_ms: int = field(
        default=30000, metadata=about("How long a request body may take to arrive.", minimum=1)
    )
    disk_free_limit: ResourceLimit = field(
        default=ResourceLimit(absolute=50 * 1000**2),
        metadata=about(
            "Free disk below which the disk alarm holds publishers back: a size (50MB, 2GiB) or "
            "mem_relative:FACTOR of memory."
        ),
    )
    disk_ballast_bytes: int = field(
        default=64 * 1024 * 1024,
        metadata=about(
            "Room set aside in the data directory, given back when a write fails for want of disk: at most "
            "this, and 1% of the filesystem (0: none).",
            minimum=0,
        ),
    )
    vm_memory_high_watermark: ResourceLimit = field(
        default=ResourceLimit(relative=0.4),
        metadata=about(
            "Resident memory above which the memory alarm holds publishers back: a fraction of memory "
            "(0.4) or a size (2GB)."
        ),
    )
    keepalive_timeout_ms: int = field(
        default=75000, metadata=about("How long an idle HTTP connection is kept open.", minimum=0)
    )

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
    "amqp": lambda v: Address.parse(str(v), what="amqp"),
    "amqps": lambda v: Address.parse(str(v), what="amqps"),
    "seeds": lambda v: tuple(Seed.parse(s) for s in (v.split(",") if isinstance(v, str) else v) if s),
    "disk_free_limit": lambda v: v if isinstance(v, ResourceLimit) else ResourceLimit.disk(str(v)),
    "vm_memory_high_watermark": lambda v: v if isinstance(v, ResourceLimit) else ResourceLimit.memory(str(v)),
    "allowed_hosts": lambda v: tuple(
        h for h in (str(h).strip() for h in (v.split(",") if isinstance(v, str) else v)) if h
    ),
}
_FLAG_WORDS = {word: True for word in ("1", "true", "yes", "on")} | {
    word: False for word in ("0", "false", "no", "off")
}


@dataclass(frozen=True)
class SettingDoc:
    """One setting as `quorumq server --help` lists it."""

    name: str
    variable: str
    default: str
    help: str


def setting_docs() -> list[SettingDoc]:
    """Every setting in declaration order, with its variable, default and help (secrets with `_FILE`)."""
    docs = []
    for known in fields(NodeConfig):
        variable = ENV_PREFIX + known.name.upper()
        if known.metadata["secret"]:
            variable += f" or {variable}{FILE_SUFFIX.upper()}"
        default = "required" if known.default is MISSING else _default_text(known.default)
        docs.append(SettingDoc(known.name, variable, default, known.metadata["help"]))
    return docs


def _default_text(value: Any) -> str:
    if value in ("", None, ()):
        return "none"
    return str(value).lower() if isinstance(value, bool) else str(value)


def load_config(
    flags: dict[str, Any], config_file: Path | None = None, warn: Callable[[str], None] = log.warning
) -> NodeConfig:
    """Merge (lowest to highest precedence) a TOML file, QUORUMQ_* variables and flags; ConfigError for a
    bad or missing value. `warn` is told of each QUORUMQ_* variable that is no setting."""
    merged: dict[str, Any] = {}
    if config_file is not None:
        try:
            merged.update(tomllib.loads(config_file.read_text()))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"config file {config_file}: {exc}") from exc
    known = {f.name: f for f in fields(NodeConfig)}
    file_keys = {name + FILE_SUFFIX for name, f in known.items() if f.metadata["secret"]} - set(known)
    for key, text in os.environ.items():
        if key.startswith(ENV_PREFIX):
            name = key[len(ENV_PREFIX) :].lower()
            if name in file_keys or (name in known and (text or known[name].type == "str")):
                merged[name] = text  # an empty variable of a number or a flag leaves its default
            elif key[len(ENV_PREFIX) :] not in CLIENT_VARIABLES:
                warn(_not_a_setting(key, [*known, *file_keys]))
    merged.update({k: v for k, v in flags.items() if v not in (None, ())})
    _read_secret_files(merged, file_keys)
    unknown = sorted(set(merged) - set(known))
    if unknown:
        raise ConfigError(f"unknown configuration keys: {', '.join(unknown)}")
    for required in ("node", "data_dir", "http", "raft"):
        if required not in merged:
            raise ConfigError(f"missing required setting {required!r} (flag --{required.replace('_', '-')})")
    config = NodeConfig(**{name: _value(known[name], value) for name, value in merged.items()})
    if config.heartbeat_ticks >= config.election_ticks:
        ticks = f"heartbeat_ticks ({config.heartbeat_ticks}), election_ticks ({config.election_ticks})"
        raise ConfigError(f"{ticks}: a leader must beat more often than followers stand")
    config.queue_defaults()
    return config


def _not_a_setting(variable: str, names: list[str]) -> str:
    """The warning for a QUORUMQ_* variable that is no setting, naming the closest one."""
    variables = [ENV_PREFIX + name.upper() for name in names]
    close = difflib.get_close_matches(variable, variables, n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    return f"{variable} is not a quorumq setting and is ignored{hint}"


def _read_secret_files(merged: dict[str, Any], file_keys: set[str]) -> None:
    """Replace each `<secret>_file` in `merged` by the secret the file holds (without the whitespace around
    it)."""
    for key in file_keys & set(merged):
        secret = key.removesuffix(FILE_SUFFIX)
        if secret in merged:
            raise ConfigError(f"give {secret} or {key}, not both")
        path = Path(str(merged.pop(key)))
        try:
            value = path.read_text().strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{key}: cannot read {path}: {exc}") from exc
        if not value:
            raise ConfigError(f"{key}: {path} is empty")
        merged[secret] = value


def _value(known: Field[Any], value: Any) -> Any:
    """A setting's value in its type, checked against its least value; ConfigError naming it."""
    name, kind = known.name, str(known.type)
    coerce = _COERCE.get(name)
    if coerce is not None:
        return coerce(value)
    if kind in ("bool", "bool | None"):
        flag = value if isinstance(value, bool) else _FLAG_WORDS.get(str(value).strip().lower())
        if flag is None:
            raise ConfigError(f"{name}: expected true or false, got {value!r}")
        return flag
    if kind in ("int", "float"):
        if isinstance(value, str):
            try:
                value = int(value) if kind == "int" else float(value)
            except ValueError as exc:
                raise ConfigError(f"{name}: expected a number, got {value!r}") from exc
        if type(value) not in ((int,) if kind == "int" else (int, float)):
            raise ConfigError(
                f"{name}: must be {'an integer' if kind == 'int' else 'a number'}, got {value!r}"
            )
        minimum = known.metadata["minimum"]
        if minimum is not None and value < minimum:
            raise ConfigError(f"{name}: must be >= {minimum}, got {value}")
        return float(value) if kind == "float" else value
    if not isinstance(value, str):
        raise ConfigError(f"{name}: must be a string, got {value!r}")
    return value
