"""The metadata machine's rules for queues and users, each checked on the typed commands and replies;
and that it is deterministic and refuses without changing anything (exchanges and bindings:
`test_metadata_exchanges.py`)."""

from __future__ import annotations

import copy

from hypothesis import given
from hypothesis import strategies as st
from metadata_strategies import commands

from metadata_state.commands import (
    BootstrapUsers,
    Command,
    Declare,
    Delete,
    DeleteUser,
    PutUser,
    SetArguments,
    SetPermissions,
)
from metadata_state.machine import MetadataMachine
from metadata_state.records import UserRecord
from metadata_state.replies import Conflict, Created, Exists, InUse, Invalid, NotFound, Ok, Stale, Updated
from metadata_state.snapshot import decode_snapshot, encode_snapshot

LIMITED = {"x-max-length": 5}


def test_a_declared_queue_gets_the_next_group_and_its_placement() -> None:
    state = MetadataMachine()
    assert state.apply(Declare("orders", LIMITED, ("b", "a"), 1234)) == Created("q1.orders")
    info = state.queues["orders"]
    assert (info.members, info.initial_members, info.created_ms) == (["b", "a"], ["b", "a"], 1234)
    assert state.apply(Declare("other", {}, ("a",), 1235)) == Created("q2.other")


def test_declaring_again_with_the_same_arguments_exists_and_with_others_conflicts() -> None:
    state = MetadataMachine()
    state.apply(Declare("orders", LIMITED, ("a",), 1))
    assert state.apply(Declare("orders", dict(LIMITED), ("b",), 2)) == Exists("q1.orders")
    assert state.apply(Declare("orders", {}, ("b",), 2)) == Conflict(LIMITED)
    assert state.queues["orders"].members == ["a"] and state.next_group == 2


def test_a_queue_without_members_is_refused_and_takes_no_group_number() -> None:
    state = MetadataMachine()
    assert isinstance(state.apply(Declare("orders", {}, (), 1)), Invalid)
    assert state.queues == {} and state.next_group == 1


def test_delete_and_set_arguments_act_only_on_the_queue_of_that_group() -> None:
    state = MetadataMachine()
    state.apply(Declare("orders", {}, ("a",), 1))
    assert isinstance(state.apply(SetArguments("orders", "q9.orders", LIMITED)), NotFound)
    assert isinstance(state.apply(Delete("orders", "q9.orders")), NotFound)
    assert state.apply(SetArguments("orders", "q1.orders", LIMITED)) == Ok()
    assert state.queues["orders"].arguments == LIMITED
    assert state.apply(Delete("orders", "q1.orders")) == Ok()
    assert isinstance(state.apply(Delete("orders", "q1.orders")), NotFound)


def test_the_user_table_is_bootstrapped_once_with_a_full_access_administrator() -> None:
    state = MetadataMachine()
    assert state.apply(BootstrapUsers("admin", "hash")) == Created()
    assert state.apply(BootstrapUsers("other", "hash2")) == Exists()
    assert state.users == {"admin": UserRecord("admin", "hash", ["administrator"], ".*", ".*", ".*")}
    assert state.users_initialised


def test_a_bootstrap_without_a_user_only_initialises_the_table() -> None:
    state = MetadataMachine()
    assert state.apply(BootstrapUsers("", "")) == Created()
    assert state.users == {} and state.users_initialised


def test_a_new_user_needs_a_password_and_an_update_without_one_keeps_it() -> None:
    state = MetadataMachine()
    assert isinstance(state.apply(PutUser("alice", "", ())), Invalid)
    assert "alice" not in state.users
    assert state.apply(PutUser("alice", "h1", ("monitoring",))) == Created()
    assert state.apply(PutUser("alice", "", ())) == Updated()
    assert state.users["alice"] == UserRecord("alice", "h1", [])
    assert state.apply(PutUser("alice", "h2", ("administrator",))) == Updated()
    assert state.users["alice"].password_hash == "h2" and state.users["alice"].is_administrator


def test_permissions_and_deletion_need_an_existing_user() -> None:
    state = MetadataMachine()
    assert isinstance(state.apply(SetPermissions("bob", ".*", "", "")), NotFound)
    assert isinstance(state.apply(DeleteUser("bob")), NotFound)
    state.apply(PutUser("bob", "h", ()))
    assert state.apply(SetPermissions("bob", "^a$", "b.*", "")) == Ok()
    assert (state.users["bob"].configure, state.users["bob"].write, state.users["bob"].read) == (
        "^a$",
        "b.*",
        "",
    )
    assert state.apply(DeleteUser("bob")) == Ok()
    assert state.users == {}


@given(st.lists(commands, max_size=30))
def test_replicas_applying_the_same_commands_hold_the_same_state(log: list[Command]) -> None:
    first, second = MetadataMachine(), MetadataMachine()
    assert [first.apply(c) for c in log] == [second.apply(c) for c in log]
    assert first == second
    assert decode_snapshot(encode_snapshot(first)) == first


@given(st.lists(commands, max_size=30))
def test_a_refused_command_changes_nothing(log: list[Command]) -> None:
    state = MetadataMachine()
    for command in log:
        before = copy.deepcopy(state)
        if isinstance(state.apply(command), Invalid | NotFound | Stale | Conflict | Exists | InUse):
            assert state == before, command
