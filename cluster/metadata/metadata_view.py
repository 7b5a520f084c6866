"""The metadata as this node applied it, read-only: what handlers, authentication, membership and the
node's own parts read instead of the metadata machine itself (changes go through `MetadataDoor`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from cluster.metadata.metadata_app import MetadataApp
from cluster.routing.routing_table import RoutingTable
from metadata_state.machine import MetadataMachine
from metadata_state.records import (
    BUILTIN_EXCHANGES,
    BindingRecord,
    ExchangeRecord,
    NodeInfo,
    PolicyRecord,
    PolicySet,
    QueueInfo,
    UserRecord,
    VhostRecord,
)
from metadata_state.vhost_names import DEFAULT_VHOST

log = logging.getLogger(__name__)


class MetadataView:
    """The node registry, the queue definitions, the users, the policies, the exchanges and the bindings of
    the metadata this node applied, and whether this node leads the metadata group. Each read sees the
    latest state (a snapshot installed replaces the machine)."""

    def __init__(self, app: MetadataApp) -> None:
        self._app = app
        self._watchers: set[Callable[[], None]] = set()
        self._routing: tuple[MetadataMachine, int, RoutingTable] | None = None

    def watch(self, watcher: Callable[[], None]) -> Callable[[], None]:
        """Call `watcher` each time this node applied a change of the metadata (users and permissions
        included), at once, before anything else runs; returns what stops it."""
        self._watchers.add(watcher)
        return lambda: self._watchers.discard(watcher)

    def changed(self) -> None:
        """The node applied metadata: tell the watchers (one that fails is logged, never the node's
        problem)."""
        for watcher in list(self._watchers):
            try:
                watcher()
            except Exception:
                log.exception("a metadata watcher failed")

    @property
    def nodes(self) -> Mapping[str, NodeInfo]:
        """Registered nodes by name."""
        return self._app.state.nodes

    @property
    def queues(self) -> Mapping[str, QueueInfo]:
        """Declared queues by name."""
        return self._app.state.queues

    @property
    def users(self) -> Mapping[str, UserRecord]:
        """Users by name."""
        return self._app.state.users

    @property
    def users_initialised(self) -> bool:
        """True once the user table was initialised (the bootstrap user created, or none configured)."""
        return self._app.state.users_initialised

    @property
    def policies(self) -> Mapping[str, PolicyRecord]:
        """Policies by name."""
        return self._app.state.policies

    @property
    def operator_policies(self) -> Mapping[str, PolicyRecord]:
        """Operator policies by name."""
        return self._app.state.operator_policies

    @property
    def policy_set(self) -> PolicySet:
        """Every policy and operator policy, as queues apply them."""
        state = self._app.state
        return PolicySet(tuple(state.policies.values()), tuple(state.operator_policies.values()))

    @property
    def policies_revision(self) -> int:
        """How many times the policies changed (the revision queues apply them under)."""
        return self._app.state.policies_revision

    def has_vhost(self, vhost: str) -> bool:
        """Whether `vhost` exists (DEFAULT_VHOST always does)."""
        return self._app.state.has_vhost(vhost)

    @property
    def vhosts(self) -> list[VhostRecord]:
        """Every vhost by name, DEFAULT_VHOST's first."""
        declared = self._app.state.vhosts
        return [VhostRecord(DEFAULT_VHOST), *(declared[name] for name in sorted(declared))]

    def exchange(self, vhost: str, name: str) -> ExchangeRecord | None:
        """Exchange `name` of `vhost`, declared or builtin; None when there is none, and for the default
        exchange ("")."""
        return self._app.state.exchange(vhost, name)

    def exchanges_in(self, vhost: str) -> list[ExchangeRecord]:
        """The exchanges of `vhost` by name: the declared ones and the builtin ones (none for a vhost
        that does not exist)."""
        state = self._app.state
        exchanges = [e for (v, _), e in state.exchanges.items() if v == vhost]
        return sorted([*exchanges, *_builtins(state, vhost)], key=lambda e: e.name)

    def bindings_in(self, vhost: str) -> list[BindingRecord]:
        """The bindings of `vhost`, by key."""
        return sorted((b for b in self._app.state.bindings.values() if b.vhost == vhost), key=lambda b: b.key)

    @property
    def exchange_count(self) -> int:
        """How many exchanges were declared (the built-in ones not counted)."""
        return len(self._app.state.exchanges)

    def has_binding(self, binding: BindingRecord) -> bool:
        """Whether a binding with `binding`'s key exists."""
        return binding.key in self._app.state.bindings

    @property
    def binding_count(self) -> int:
        """How many bindings there are, of every exchange and vhost."""
        return len(self._app.state.bindings)

    @property
    def routing_revision(self) -> int:
        """How many applied commands changed the exchanges or the bindings."""
        return self._app.state.routing_revision

    @property
    def routing_table(self) -> RoutingTable:
        """The exchanges and bindings as publishes are routed by them: built again once they changed (or a
        snapshot replaced the machine). Builtin exchanges are in it for DEFAULT_VHOST and every vhost a
        binding is of."""
        state, built = self._app.state, self._routing
        if built is not None and built[0] is state and built[1] == state.routing_revision:
            return built[2]
        vhosts = dict.fromkeys([DEFAULT_VHOST, *(b.vhost for b in state.bindings.values())])
        exchanges = [*(e for vhost in vhosts for e in _builtins(state, vhost)), *state.exchanges.values()]
        table = RoutingTable(exchanges, state.bindings.values())
        self._routing = (state, state.routing_revision, table)
        return table

    @property
    def is_leader(self) -> bool:
        """True while this node leads the metadata group."""
        return self._app.is_leader

    def queues_on(self, node: str) -> list[QueueInfo]:
        """The queues listing `node` among their members."""
        return [info for info in self._app.state.queues.values() if node in info.members]


def _builtins(state: MetadataMachine, vhost: str) -> list[ExchangeRecord]:
    """The builtin exchanges of `vhost`."""
    return [e for name in BUILTIN_EXCHANGES if (e := state.exchange(vhost, name)) is not None]
