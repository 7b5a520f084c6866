"""Hypothesis strategies for metadata commands."""

from __future__ import annotations

from hypothesis import strategies as st

from metadata_state.commands import (
    BootstrapUsers,
    ClearPolicy,
    Command,
    Declare,
    Delete,
    DeleteUser,
    ForgetNode,
    PutUser,
    RegisterNode,
    SetArguments,
    SetMembers,
    SetPermissions,
    SetPolicy,
)

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
    st.builds(SetPermissions, NAMES, TEXT, TEXT, TEXT),
    st.builds(SetPolicy, NAMES, TEXT, ARGUMENTS, st.integers(-(2**63), 2**63 - 1), st.booleans()),
    st.builds(ClearPolicy, NAMES, st.booleans()),
)
