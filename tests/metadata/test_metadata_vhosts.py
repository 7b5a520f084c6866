"""Virtual hosts in the metadata machine: declared and deleted, each its own namespace of queues
(by qualified name), exchanges, bindings, policies and permissions; snapshotted in version 9 only once
one exists, and their commands only of codec version 5."""

from __future__ import annotations

import msgpack
import pytest

from metadata_state.codec import (
    EXCHANGE_CODEC_VERSION,
    VHOST_CODEC_VERSION,
    MetadataDecodeError,
    decode,
    encode,
)
from metadata_state.commands import (
    Bind,
    ClearPermissions,
    ClearPolicy,
    Command,
    Declare,
    DeclareExchange,
    DeclareVhost,
    Delete,
    DeleteVhost,
    PutUser,
    SetPermissions,
    SetPolicy,
)
from metadata_state.machine import MetadataMachine
from metadata_state.records import QUEUE_DESTINATION, VhostRecord
from metadata_state.replies import Created, InUse, Invalid, NotFound, Ok, Updated
from metadata_state.snapshot import decode_snapshot, encode_snapshot
from metadata_state.vhost_names import DEFAULT_VHOST, qualified, split

TENANT = "tenant"


def machine(*log: Command) -> MetadataMachine:
    state = MetadataMachine()
    for command in log:
        assert isinstance(state.apply(command), Ok | Created | Updated), command
    return state


def test_qualified_names_keep_the_default_vhosts_as_they_were_and_split_back() -> None:
    assert qualified(DEFAULT_VHOST, "orders") == "orders" and split("orders") == (DEFAULT_VHOST, "orders")
    assert qualified(TENANT, "orders") == "tenant/orders" and split("tenant/orders") == (TENANT, "orders")


def test_a_vhost_is_declared_then_updated_and_the_default_one_always_exists() -> None:
    state = MetadataMachine()
    assert state.has_vhost(DEFAULT_VHOST) and not state.has_vhost(TENANT)
    assert state.apply(DeclareVhost(TENANT, "a tenant", ("prod",))) == Created()
    assert state.apply(DeclareVhost(TENANT, "the tenant", ())) == Updated()
    assert state.vhosts == {TENANT: VhostRecord(TENANT, "the tenant", [])}
    assert isinstance(state.apply(DeclareVhost(DEFAULT_VHOST, "", ())), Invalid)
    assert isinstance(state.apply(DeleteVhost(DEFAULT_VHOST)), Invalid)
    assert isinstance(state.apply(DeleteVhost("missing")), NotFound)


def test_rule_a_queue_of_the_default_vhost_and_a_vhost_never_share_a_name() -> None:
    """`GET /api/queues/{x}` lists vhost x or shows queue x of `/`: never both."""
    state = machine(Declare("orders", {}, ("n1",), 0), DeclareVhost(TENANT, "", ()))
    assert isinstance(state.apply(DeclareVhost("orders", "", ())), Invalid)
    assert isinstance(state.apply(Declare(TENANT, {}, ("n1",), 0)), Invalid)
    assert set(state.queues) == {"orders"} and set(state.vhosts) == {TENANT}


def test_a_queue_is_declared_only_in_a_vhost_that_exists_and_names_repeat_across_vhosts() -> None:
    state = MetadataMachine()
    assert isinstance(state.apply(Declare("tenant/orders", {}, ("n1",), 0)), NotFound)
    assert state.apply(DeclareVhost(TENANT, "", ())) == Created()
    assert state.apply(Declare("tenant/orders", {}, ("n1",), 0)) == Created("q1.tenant/orders")
    assert state.apply(Declare("orders", {"x-max-length": 1}, ("n1",), 0)) == Created("q2.orders")
    assert state.queues["tenant/orders"].arguments == {} and state.queues["orders"].arguments


def test_rule_a_vhost_holding_a_queue_is_not_deleted() -> None:
    state = machine(DeclareVhost(TENANT, "", ()), Declare("tenant/orders", {}, ("n1",), 0))
    assert isinstance(state.apply(DeleteVhost(TENANT)), InUse)
    assert state.apply(Delete("tenant/orders", "q1.tenant/orders")) == Ok()
    assert state.apply(DeleteVhost(TENANT)) == Ok() and not state.has_vhost(TENANT)


def test_deleting_a_vhost_takes_its_exchanges_bindings_policies_and_permissions_with_it() -> None:
    state = machine(
        DeclareVhost(TENANT, "", ()),
        PutUser("alice", "hash", ()),
        SetPermissions("alice", ".*", ".*", ".*", TENANT),
        SetPermissions("alice", "^a", "", "", DEFAULT_VHOST),
        SetPolicy("cap", ".*", {"max-length": 1}, 0, vhost=TENANT),
        SetPolicy("cap", ".*", {"max-length": 2}, 0),
        SetPolicy("op", ".*", {"max-length": 3}, 0, operator=True, vhost=TENANT),
        DeclareExchange(TENANT, "logs", "fanout", True, False, False, {}),
        Bind(TENANT, "logs", "amq.fanout", "exchange", "", {}),
    )
    assert set(state.policies) == {"tenant/cap", "cap"}
    assert state.policies["tenant/cap"].vhost == TENANT and state.policies["cap"].vhost == DEFAULT_VHOST
    assert state.users["alice"].all_permissions()[TENANT] == (".*", ".*", ".*")
    routing, policies = state.routing_revision, state.policies_revision
    assert state.apply(DeleteVhost(TENANT)) == Ok()
    assert state.exchanges == {} and state.bindings == {} and state.routing_revision == routing + 1
    assert set(state.policies) == {"cap"} and state.operator_policies == {}
    assert state.policies_revision > policies
    assert TENANT not in state.users["alice"].all_permissions()
    assert state.users["alice"].all_permissions()[DEFAULT_VHOST] == ("^a", "", "")


def test_permissions_are_per_vhost_and_cleared_one_vhost_at_a_time() -> None:
    state = machine(DeclareVhost(TENANT, "", ()), PutUser("bob", "hash", ()))
    assert isinstance(state.apply(SetPermissions("bob", ".*", "", "", "missing")), NotFound)
    state.apply(SetPermissions("bob", "c", "w", "r", TENANT))
    state.apply(SetPermissions("bob", "C", "W", "R"))
    assert state.users["bob"].all_permissions() == {DEFAULT_VHOST: ("C", "W", "R"), TENANT: ("c", "w", "r")}
    assert state.apply(ClearPermissions("bob", TENANT)) == Ok()
    assert isinstance(state.apply(ClearPermissions("bob", TENANT)), NotFound)
    assert state.apply(ClearPermissions("bob", DEFAULT_VHOST)) == Ok()
    assert state.users["bob"].all_permissions() == {DEFAULT_VHOST: ("", "", "")}


def test_policies_and_exchanges_need_their_vhost_and_policies_clear_per_vhost() -> None:
    state = machine(DeclareVhost(TENANT, "", ()))
    assert isinstance(state.apply(SetPolicy("p", ".*", {}, 0, vhost="missing")), NotFound)
    missing = DeclareExchange("missing", "x", "direct", True, False, False, {})
    assert isinstance(state.apply(missing), NotFound)
    assert state.exchange("missing", "amq.direct") is None
    assert state.exchange(TENANT, "amq.direct") is not None
    state.apply(SetPolicy("p", ".*", {}, 0, vhost=TENANT))
    assert isinstance(state.apply(ClearPolicy("p")), NotFound)
    assert state.apply(ClearPolicy("p", vhost=TENANT)) == Ok()


def test_rule_a_binding_reaches_only_a_queue_of_its_own_vhost() -> None:
    state = machine(DeclareVhost(TENANT, "", ()), Declare("tenant/orders", {}, ("n1",), 0))
    for vhost, queue in ((DEFAULT_VHOST, "tenant/orders"), (DEFAULT_VHOST, "orders"), (TENANT, "x")):
        assert isinstance(state.apply(Bind(vhost, "amq.direct", queue, QUEUE_DESTINATION, "", {})), NotFound)
    assert state.apply(Bind(TENANT, "amq.direct", "orders", QUEUE_DESTINATION, "k", {})) == Created()
    assert state.apply(Delete("tenant/orders", "q1.tenant/orders")) == Ok()
    assert state.bindings == {}


def test_a_snapshot_holds_vhosts_in_version_9_and_the_version_before_while_there_are_none() -> None:
    state = machine(PutUser("bob", "hash", ()), SetPolicy("p", ".*", {}, 0))
    raw = msgpack.unpackb(encode_snapshot(state))
    assert raw["version"] == 4 and "vhost_permissions" not in raw["users"][0]
    assert "vhost" not in raw["policies"][0]
    state.apply(DeclareVhost(TENANT, "t", ("a",)))
    state.apply(SetPermissions("bob", ".*", "", "", TENANT))
    state.apply(SetPolicy("p", "^o", {}, 1, vhost=TENANT))
    state.apply(Declare("tenant/orders", {}, ("n1",), 0))
    data = encode_snapshot(state)
    assert msgpack.unpackb(data)["version"] == 9
    assert decode_snapshot(data) == state


@pytest.mark.parametrize(
    "command",
    [
        DeclareVhost(TENANT, "", ()),
        DeleteVhost(TENANT),
        ClearPermissions("bob", DEFAULT_VHOST),
        SetPermissions("bob", "", "", "", TENANT),
        SetPolicy("p", ".*", {}, 0, vhost=TENANT),
        ClearPolicy("p", vhost=TENANT),
    ],
    ids=lambda c: type(c).__name__,
)
def test_rule_a_vhost_command_is_only_of_version_5_so_older_nodes_never_get_one(command: Command) -> None:
    version, tag, named = encode(command)
    assert version == VHOST_CODEC_VERSION and decode([version, tag, named]) == command
    for older in range(VHOST_CODEC_VERSION):
        with pytest.raises(ValueError, match="cannot be written"):
            encode(command, older)
    with pytest.raises(MetadataDecodeError, match="this node reads up to 4"):
        decode([version, tag, named], 4)


def test_a_command_of_the_default_vhost_is_written_as_before() -> None:
    assert encode(SetPermissions("bob", "c", "w", "r"), 0) == ["set_permissions", "bob", "c", "w", "r"]
    assert encode(SetPolicy("p", ".*", {}, 0), 2) == [
        2,
        "set_policy",
        {"policy": "p", "pattern": ".*", "definition": {}, "priority": 0},
    ]
    assert decode(["set_permissions", "bob", "c", "w", "r"]) == SetPermissions("bob", "c", "w", "r")


@pytest.mark.parametrize(
    "written",
    [
        [
            4,
            "declare_exchange",
            {
                "vhost": "/",
                "exchange": "logs",
                "type": "topic",
                "durable": True,
                "auto_delete": False,
                "internal": False,
                "arguments": {},
            },
        ],
        [
            4,
            "bind",
            {
                "vhost": "/",
                "source": "logs",
                "destination": "q",
                "destination_type": "queue",
                "routing_key": "#",
                "arguments": {},
            },
        ],
        [4, "delete_exchange", {"vhost": "/", "exchange": "logs", "if_unused": False}],
    ],
    ids=lambda written: written[1],
)
def test_rule_an_exchange_command_the_release_before_vhosts_logged_still_decodes(
    written: list[object],
) -> None:
    """Review finding: vhosts raised the exchanges' codec version with the codec's, so an exchange or
    binding the previous release logged in version 4 no longer decoded, halting the metadata group of an
    upgraded node; and exchanges were refused until every node read version 5."""
    assert EXCHANGE_CODEC_VERSION == 4
    command = decode(written)
    assert encode(command, 4) == written
