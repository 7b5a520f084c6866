"""Hypothesis strategies for metadata commands."""

from __future__ import annotations

from hypothesis import strategies as st

from metadata_state.commands import (
    Bind,
    BootstrapUsers,
    ClearPermissions,
    ClearPolicy,
    Command,
    Declare,
    DeclareExchange,
    DeclareVhost,
    Delete,
    DeleteExchange,
    DeleteUser,
    DeleteVhost,
    ForgetNode,
    PutUser,
    RegisterNode,
    SetArguments,
    SetMembers,
    SetPermissions,
    SetPolicy,
    Unbind,
)
from metadata_state.records import BUILTIN_EXCHANGES, EXCHANGE_TYPES
from metadata_state.vhost_names import DEFAULT_VHOST

TEXT = st.text(max_size=12)
NAMES = st.sampled_from(("a", "b", "c", "q", "alice"))
MEMBERS = st.lists(NAMES, max_size=4).map(tuple)
FENCES = st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1))
ARGUMENTS = st.dictionaries(
    st.sampled_from(("x-max-length", "x-overflow", "x-quorum-initial-group-size", "x-dead-letter-exchange")),
    st.one_of(st.integers(-(2**63), 2**63 - 1), TEXT, st.booleans(), st.none()),
    max_size=3,
)
GROUPS = st.sampled_from(("q1.q", "q2.q", "q1.a"))
VHOSTS = st.sampled_from((DEFAULT_VHOST, DEFAULT_VHOST, "other"))
EXCHANGES = st.sampled_from(("", "x", "y", "z", *BUILTIN_EXCHANGES))
EXCHANGE_KINDS = st.sampled_from((*EXCHANGE_TYPES, "x-unknown"))
DESTINATION_TYPES = st.sampled_from(("queue", "queue", "exchange", "stream"))
# Destinations name queues (NAMES) and exchanges alike, so that binds find both.
DESTINATIONS = NAMES | EXCHANGES
ROUTING_KEYS = st.sampled_from(("", "k", "a.*", "#"))
BINDING_ARGUMENTS = st.dictionaries(
    st.sampled_from(("x-match", "h")), st.sampled_from(("all", "any", 1)), max_size=2
)

commands: st.SearchStrategy[Command] = st.one_of(
    st.builds(RegisterNode, NAMES, TEXT, TEXT, TEXT),
    st.builds(ForgetNode, NAMES),
    st.builds(Declare, NAMES, ARGUMENTS, MEMBERS, st.integers(0, 2**63 - 1)),
    st.builds(Delete, NAMES, GROUPS),
    st.builds(SetMembers, NAMES, GROUPS, MEMBERS, FENCES),
    st.builds(SetArguments, NAMES, GROUPS, ARGUMENTS),
    st.builds(BootstrapUsers, NAMES | st.just(""), TEXT),
    st.builds(PutUser, NAMES, TEXT, st.lists(st.sampled_from(("administrator", "monitoring"))).map(tuple)),
    st.builds(DeleteUser, NAMES),
    st.builds(SetPermissions, NAMES, TEXT, TEXT, TEXT, VHOSTS),
    st.builds(ClearPermissions, NAMES, VHOSTS),
    st.builds(SetPolicy, NAMES, TEXT, ARGUMENTS, st.integers(-(2**63), 2**63 - 1), st.booleans(), VHOSTS),
    st.builds(ClearPolicy, NAMES, st.booleans(), VHOSTS),
    st.builds(DeclareVhost, VHOSTS | NAMES, TEXT, st.lists(TEXT, max_size=2).map(tuple)),
    st.builds(DeleteVhost, VHOSTS | NAMES),
    st.builds(
        DeclareExchange,
        VHOSTS,
        EXCHANGES,
        EXCHANGE_KINDS,
        st.booleans(),
        st.booleans(),
        st.booleans(),
        ARGUMENTS,
    ),
    st.builds(DeleteExchange, VHOSTS, EXCHANGES, st.booleans()),
    st.builds(Bind, VHOSTS, EXCHANGES, DESTINATIONS, DESTINATION_TYPES, ROUTING_KEYS, BINDING_ARGUMENTS),
    st.builds(Unbind, VHOSTS, EXCHANGES, DESTINATIONS, DESTINATION_TYPES, ROUTING_KEYS, BINDING_ARGUMENTS),
)

# Commands among few queues and exchanges, mostly of "/" and well formed, so that binds, cascades and
# auto-deletes happen.
ROUTED_QUEUES = st.sampled_from(("a", "b", "other/a"))  # by qualified name
BOUND_QUEUES = st.sampled_from(("a", "b"))  # by name in the binding's vhost
ROUTED_EXCHANGES = st.sampled_from(("x", "y", "z", "amq.direct"))
ROUTED_VHOSTS = st.sampled_from((DEFAULT_VHOST,) * 5 + ("other",))
routing_commands: st.SearchStrategy[Command] = st.one_of(
    st.builds(Declare, ROUTED_QUEUES, st.just({}), st.just(("n1",)), st.just(0)),
    st.builds(
        Delete,
        ROUTED_QUEUES,
        st.sampled_from([f"q{i}.{q}" for i in range(1, 6) for q in ("a", "b", "other/a")]),
    ),
    st.builds(DeclareVhost, st.just("other"), st.just(""), st.just(())),
    st.builds(DeleteVhost, st.just("other")),
    ROUTED_EXCHANGES.flatmap(  # x and y auto-delete: declared again alike, they exist
        lambda name: st.builds(
            DeclareExchange,
            ROUTED_VHOSTS,
            st.just(name),
            st.just("direct"),
            st.just(True),
            st.just(name in "xy"),
            st.just(False),
            st.just({}),
        )
    ),
    st.builds(DeleteExchange, ROUTED_VHOSTS, ROUTED_EXCHANGES, st.booleans()),
    *(
        st.builds(
            kind,
            ROUTED_VHOSTS,
            ROUTED_EXCHANGES,
            destination,
            st.just(destination_type),
            st.sampled_from(("", "k")),
            st.just({}),
        )
        for kind in (Bind, Bind, Unbind)
        for destination, destination_type in ((BOUND_QUEUES, "queue"), (ROUTED_EXCHANGES, "exchange"))
    ),
)
