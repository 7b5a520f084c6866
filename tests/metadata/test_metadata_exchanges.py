"""Exchanges and bindings in the metadata machine (issue 41, docs/internals/design-routing.md slice 2):
RabbitMQ's rules for declaring, deleting, binding and unbinding, the bindings a deleted queue or
exchange takes with it, auto-delete, the routing revision, snapshot version 8, and how a node reads
(`MetadataView`) and proposes (`MetadataDoor`) them."""

from __future__ import annotations

import asyncio
import copy
from dataclasses import asdict
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st
from metadata_strategies import routing_commands

from cluster.metadata.metadata_app import MetadataApp
from cluster.metadata.metadata_door import MetadataDoor
from cluster.metadata.metadata_view import MetadataView
from cluster.replication.format_versions import FormatVersions
from metadata_state.codec import EXCHANGE_CODEC_VERSION, decode
from metadata_state.commands import (
    MAX_ARGUMENT_DEPTH,
    MAX_ARGUMENT_VALUES,
    Bind,
    Command,
    Declare,
    DeclareExchange,
    DeclareVhost,
    Delete,
    DeleteExchange,
    InvalidCommand,
    SetPolicy,
    Unbind,
)
from metadata_state.machine import MetadataMachine
from metadata_state.records import (
    BUILTIN_EXCHANGES,
    EXCHANGE_DESTINATION,
    QUEUE_DESTINATION,
    BindingRecord,
    ExchangeRecord,
)
from metadata_state.replies import Conflict, Created, Exists, InUse, Invalid, NotFound, Ok
from metadata_state.snapshot import SNAPSHOT_VERSION, decode_snapshot, encode_snapshot
from metadata_state.vhost_names import DEFAULT_VHOST, qualified, split

V = DEFAULT_VHOST


def declare(name: str, kind: str = "direct", auto_delete: bool = False, **arguments: Any) -> DeclareExchange:
    return DeclareExchange(V, name, kind, True, auto_delete, False, arguments)


def to_queue(source: str, queue: str, key: str = "", vhost: str = V) -> Bind:
    return Bind(vhost, source, queue, QUEUE_DESTINATION, key, {})


def to_exchange(source: str, destination: str, key: str = "") -> Bind:
    return Bind(V, source, destination, EXCHANGE_DESTINATION, key, {})


def unbind(bind: Bind) -> Unbind:
    return Unbind(**asdict(bind))


def machine(*log: Command) -> MetadataMachine:
    """A machine that applied `log`, each command taking effect."""
    state = MetadataMachine()
    for command in log:
        assert isinstance(state.apply(command), Ok | Created), command
    return state


def test_an_exchange_is_declared_once_and_again_only_with_the_same_definition() -> None:
    state = machine(DeclareVhost("other", "", ()))
    logs = DeclareExchange(V, "logs", "topic", True, False, False, {"alternate-exchange": "nowhere"})
    assert state.apply(logs) == Created()  # its alternate exchange need not exist
    assert state.exchanges == {
        (V, "logs"): ExchangeRecord(V, "logs", "topic", True, False, False, logs.arguments)
    }
    assert state.apply(copy.deepcopy(logs)) == Exists()
    assert state.apply(DeclareExchange(V, "logs", "fanout", True, False, False, {})) == Conflict(
        {
            "type": "topic",
            "durable": True,
            "auto_delete": False,
            "internal": False,
            "arguments": {"alternate-exchange": "nowhere"},
        }
    )
    for other in (
        DeclareExchange(V, "logs", "topic", False, False, False, logs.arguments),
        DeclareExchange(V, "logs", "topic", True, True, False, logs.arguments),
        DeclareExchange(V, "logs", "topic", True, False, True, logs.arguments),
        DeclareExchange(V, "logs", "topic", True, False, False, {}),
    ):
        assert isinstance(state.apply(other), Conflict), other
    assert state.apply(DeclareExchange("other", "logs", "fanout", True, False, False, {})) == Created()
    assert state.routing_revision == 2


def test_the_default_exchange_and_unknown_types_cannot_be_declared() -> None:
    state = MetadataMachine()
    assert state.apply(declare("")) == Invalid("the default exchange cannot be declared")
    assert isinstance(state.apply(declare("x", "x-consistent-hash")), Invalid)
    assert state == MetadataMachine()


@pytest.mark.parametrize("vhost", [V, "other"])
def test_a_builtin_exchange_exists_in_every_vhost_with_its_type_and_default_flags(vhost: str) -> None:
    state = machine(DeclareVhost("other", "", ()))
    for name, kind in BUILTIN_EXCHANGES.items():
        assert state.apply(DeclareExchange(vhost, name, kind, True, False, False, {})) == Exists()
        assert state.exchange(vhost, name) == ExchangeRecord(vhost, name, kind, durable=True)
    assert state.apply(DeclareExchange(vhost, "amq.direct", "direct", False, False, False, {})) == Conflict(
        {"type": "direct", "durable": True, "auto_delete": False, "internal": False, "arguments": {}}
    )
    assert isinstance(
        state.apply(DeclareExchange(vhost, "amq.topic", "direct", True, False, False, {})), Conflict
    )
    assert state.exchanges == {} and state.routing_revision == 0
    assert state.exchange(vhost, "") is None and state.exchange(vhost, "amq.nothing") is None


def test_the_default_and_the_builtin_exchanges_cannot_be_deleted() -> None:
    state = MetadataMachine()
    for name in ("", *BUILTIN_EXCHANGES):
        assert isinstance(state.apply(DeleteExchange(V, name)), Invalid), name
    assert isinstance(state.apply(DeleteExchange(V, "missing")), NotFound)


def test_deleting_an_exchange_removes_every_binding_from_and_to_it() -> None:
    state = machine(
        Declare("q", {}, ("n1",), 0),
        declare("x"),
        declare("y"),
        to_queue("x", "q", "k"),
        to_exchange("x", "y"),
        to_exchange("y", "x"),
        to_exchange("amq.direct", "x"),
        to_queue("y", "q"),
    )
    revision = state.routing_revision
    assert state.apply(DeleteExchange(V, "x")) == Ok()
    assert (V, "x") not in state.exchanges
    assert list(state.bindings.values()) == [BindingRecord(V, "y", "q", QUEUE_DESTINATION, "")]
    assert state.routing_revision == revision + 1


def test_if_unused_refuses_to_delete_an_exchange_that_is_a_source_but_not_one_only_bound_to() -> None:
    state = machine(declare("x"), declare("y"), to_exchange("x", "y"))
    before = copy.deepcopy(state)
    assert state.apply(DeleteExchange(V, "x", if_unused=True)) == InUse(
        "exchange 'x' is the source of a binding"
    )
    assert state == before
    assert state.apply(DeleteExchange(V, "y", if_unused=True)) == Ok()
    assert state.bindings == {}


def test_a_bind_needs_a_named_source_and_a_known_kind_of_destination() -> None:
    state = machine(Declare("q", {}, ("n1",), 0), declare("x"))
    assert state.apply(to_queue("", "q")) == Invalid("the default exchange takes no bindings")
    assert isinstance(state.apply(Bind(V, "x", "q", "stream", "", {})), Invalid)
    assert isinstance(state.apply(to_exchange("x", "")), Invalid)
    assert state.bindings == {} and state.routing_revision == 1


def test_a_bind_needs_its_source_and_destination_to_exist() -> None:
    state = machine(
        DeclareVhost("other", "", ()),
        Declare("q", {}, ("n1",), 0),
        declare("x"),
        DeclareExchange("other", "x", "direct", True, False, False, {}),
    )
    assert isinstance(state.apply(to_queue("missing", "q")), NotFound)
    assert isinstance(state.apply(to_queue("x", "missing")), NotFound)
    assert isinstance(state.apply(to_queue("x", "q", vhost="other")), NotFound)  # q is of "/"
    assert isinstance(state.apply(to_exchange("x", "missing")), NotFound)
    assert state.bindings == {}
    assert state.apply(to_queue("amq.topic", "q", "a.#")) == Created()
    assert state.apply(to_exchange("x", "amq.fanout")) == Created()


def test_the_same_binding_twice_exists_and_other_arguments_make_another() -> None:
    state = machine(Declare("q", {}, ("n1",), 0), declare("h", "headers"))
    matching = Bind(V, "h", "q", QUEUE_DESTINATION, "", {"x-match": "any", "kind": "a"})
    assert state.apply(matching) == Created()
    assert state.apply(copy.deepcopy(matching)) == Exists()
    assert state.apply(Bind(V, "h", "q", QUEUE_DESTINATION, "", {"x-match": "all", "kind": "a"})) == Created()
    assert state.apply(to_queue("h", "q")) == Created()
    assert len(state.bindings) == 3 and state.routing_revision == 4
    assert all(key == binding.key for key, binding in state.bindings.items())


def test_unbind_removes_only_that_binding_and_a_missing_one_is_not_found() -> None:
    state = machine(
        Declare("q", {}, ("n1",), 0), declare("x"), to_queue("x", "q", "a"), to_queue("x", "q", "b")
    )
    assert isinstance(state.apply(unbind(to_queue("x", "q", "c"))), NotFound)
    assert state.apply(unbind(to_queue("x", "q", "a"))) == Ok()
    assert [b.routing_key for b in state.bindings.values()] == ["b"]
    assert isinstance(state.apply(unbind(to_queue("x", "q", "a"))), NotFound)
    assert state.routing_revision == 4


def test_an_auto_delete_exchange_goes_with_its_last_binding_as_a_source() -> None:
    state = machine(
        Declare("q", {}, ("n1",), 0),
        declare("auto", auto_delete=True),
        declare("idle", auto_delete=True),
        to_queue("auto", "q", "a"),
        to_queue("auto", "q", "b"),
        to_exchange("amq.direct", "auto"),
    )
    assert state.apply(unbind(to_queue("auto", "q", "a"))) == Ok()
    assert (V, "auto") in state.exchanges
    assert state.apply(unbind(to_exchange("amq.direct", "auto"))) == Ok()  # only bound to: it stays
    assert (V, "auto") in state.exchanges
    revision = state.routing_revision
    assert state.apply(unbind(to_queue("auto", "q", "b"))) == Ok()
    assert (V, "auto") not in state.exchanges and state.routing_revision == revision + 1
    assert (V, "idle") in state.exchanges  # never bound: nothing made it go


def test_auto_delete_cascades_through_exchanges_bound_to_each_other() -> None:
    """q <- c <- b <- a, every exchange auto-delete, and d -> b beside: deleting q empties c, whose
    deletion takes b -> c and empties b, whose deletion takes a -> b and d -> b, emptying a and d."""
    state = machine(
        Declare("q", {}, ("n1",), 0),
        Declare("kept", {}, ("n1",), 0),
        *(declare(name, auto_delete=True) for name in "abcd"),
        declare("plain"),
        to_queue("c", "q"),
        to_exchange("b", "c"),
        to_exchange("a", "b"),
        to_exchange("d", "b"),
        to_exchange("plain", "b"),
        to_queue("plain", "kept"),
    )
    revision = state.routing_revision
    group = state.queues["q"].group
    assert state.apply(Delete("q", group)) == Ok()
    assert sorted(name for _, name in state.exchanges) == ["plain"]
    assert list(state.bindings.values()) == [BindingRecord(V, "plain", "kept", QUEUE_DESTINATION, "")]
    assert state.routing_revision == revision + 1  # one command, one revision


def test_deleting_an_exchange_auto_deletes_the_sources_it_left_without_bindings() -> None:
    state = machine(declare("target"), declare("feeder", auto_delete=True), to_exchange("feeder", "target"))
    assert state.apply(DeleteExchange(V, "target")) == Ok()
    assert state.exchanges == {} and state.bindings == {}


def test_deleting_a_queue_removes_its_bindings_and_counts_a_revision_only_then() -> None:
    state = machine(
        Declare("q", {}, ("n1",), 0),
        Declare("other", {}, ("n1",), 0),
        declare("x"),
        to_queue("x", "q"),
        to_queue("x", "other"),
    )
    revision = state.routing_revision
    assert state.apply(Delete("q", state.queues["q"].group)) == Ok()
    assert [b.destination for b in state.bindings.values()] == ["other"]
    assert state.routing_revision == revision + 1
    assert state.apply(Declare("q", {}, ("n1",), 1)) == Created("q3.q")  # a new queue: not bound
    assert state.apply(Delete("q", "q3.q")) == Ok()
    assert state.routing_revision == revision + 1


def _bound_things_exist(state: MetadataMachine) -> None:
    for key, binding in state.bindings.items():
        assert key == binding.key
        assert binding.source and state.exchange(binding.vhost, binding.source) is not None
        if binding.destination_type == QUEUE_DESTINATION:
            assert qualified(binding.vhost, binding.destination) in state.queues
        else:
            assert state.exchange(binding.vhost, binding.destination) is not None


def aimed(state: MetadataMachine, data: st.DataObject) -> Command:
    """A command of `routing_commands`, or as often one aimed at what `state` holds: a bind between its
    exchanges and queues, an unbind of one of its bindings, a delete of one of its queues or exchanges."""
    exchanges = [*state.exchanges, (V, "amq.direct")]
    held: list[Command] = [
        *(
            to_queue(name, split(queue)[1], key, vhost)
            for vhost, name in exchanges
            for queue in state.queues
            for key in "ab"
        ),
        *(
            Bind(v, name, other, EXCHANGE_DESTINATION, "", {})
            for v, name in exchanges
            for w, other in exchanges
            if v == w
        ),
        *(Unbind(**asdict(binding)) for binding in state.bindings.values()),
        *(Delete(queue.name, queue.group) for queue in state.queues.values()),
        *(DeleteExchange(vhost, name, unused) for vhost, name in state.exchanges for unused in (False, True)),
    ]
    aim: bool = data.draw(st.booleans())
    command: Command = data.draw(st.sampled_from(held) if held and aim else routing_commands)
    return command


@given(st.data())
def test_each_command_counts_one_revision_exactly_when_it_changed_the_routing(data: st.DataObject) -> None:
    state = MetadataMachine()
    for _ in range(40):
        command = aimed(state, data)
        before = copy.deepcopy((state.exchanges, state.bindings))
        revision = state.routing_revision
        state.apply(command)
        changed = (state.exchanges, state.bindings) != before
        assert state.routing_revision == revision + changed, command
        _bound_things_exist(state)


@given(st.data())
def test_replicas_and_snapshots_hold_the_same_routing_in_the_same_order(data: st.DataObject) -> None:
    first, second = MetadataMachine(), MetadataMachine()
    log = []
    for _ in range(40):
        log.append(aimed(first, data))
        assert first.apply(log[-1]) == second.apply(log[-1])
    restored = decode_snapshot(encode_snapshot(first))
    assert restored == first == second
    assert list(restored.bindings) == list(first.bindings)
    assert list(restored.exchanges) == list(first.exchanges)
    for command in log:  # a restored replica goes on as the one it was taken from
        assert restored.apply(command) == first.apply(command)
    assert restored == first


def test_a_machine_that_never_routed_snapshots_in_the_version_it_did_before() -> None:
    state = MetadataMachine()
    assert msgpack.unpackb(encode_snapshot(state))["version"] == 3
    state.apply(declare(""))  # refused: nothing changed
    state.apply(SetPolicy("cap", ".*", {"max-length": 1}, 0, operator=True))
    assert msgpack.unpackb(encode_snapshot(state))["version"] == 7
    assert "exchanges" not in msgpack.unpackb(encode_snapshot(state))


def test_a_snapshot_keeps_exchanges_and_bindings_in_version_8_once_they_changed() -> None:
    state = machine(
        Declare("q", {}, ("n1",), 0),
        DeclareExchange(V, "h", "headers", True, True, True, {"alternate-exchange": "amq.fanout"}),
        Bind(V, "h", "q", QUEUE_DESTINATION, "", {"x-match": "any", "n": 1}),
    )
    data = encode_snapshot(state)
    raw = msgpack.unpackb(data)
    assert raw["version"] == 8 and SNAPSHOT_VERSION == 9
    assert "properties_key" not in raw["bindings"][0]
    assert decode_snapshot(data) == state
    state.apply(DeleteExchange(V, "h"))
    data = encode_snapshot(state)  # nothing left, but a revision a publish may wait for
    assert msgpack.unpackb(data)["version"] == 8 and decode_snapshot(data).routing_revision == 3


def test_a_snapshot_of_version_7_restores_with_no_exchanges_or_bindings() -> None:
    written_by_version_7 = msgpack.packb(
        {
            "version": 7,
            "operator_policies": [{"name": "cap", "pattern": ".*", "definition": {}, "priority": 0}],
            "nodes": [],
            "queues": [],
            "next_group": 1,
            "users": [],
            "users_initialised": True,
        }
    )
    restored = decode_snapshot(written_by_version_7)
    assert (restored.exchanges, restored.bindings, restored.routing_revision) == ({}, {}, 0)
    assert "cap" in restored.operator_policies


def test_the_view_lists_declared_and_builtin_exchanges_and_the_bindings_by_vhost() -> None:
    app = MetadataApp(lambda: None)
    view = MetadataView(app)
    for command in (
        DeclareVhost("other", "", ()),
        Declare("q", {}, ("n1",), 0),
        declare("zeta"),
        declare("alpha", "fanout"),
        DeclareExchange("other", "beta", "topic", True, False, False, {}),
        to_queue("zeta", "q", "b"),
        to_queue("amq.direct", "q", "a"),
    ):
        app.state.apply(command)
    names = [e.name for e in view.exchanges_in(V)]
    assert names == sorted(["alpha", "zeta", *BUILTIN_EXCHANGES])
    assert [e.name for e in view.exchanges_in("other")] == sorted(["beta", *BUILTIN_EXCHANGES])
    assert view.exchanges_in("missing") == []
    assert view.exchange(V, "amq.match") == ExchangeRecord(V, "amq.match", "headers", durable=True)
    assert view.exchange(V, "alpha") == app.state.exchanges[(V, "alpha")]
    assert view.exchange(V, "") is None and view.exchange(V, "beta") is None
    assert [b.source for b in view.bindings_in(V)] == ["amq.direct", "zeta"]
    assert view.bindings_in("other") == []
    assert view.routing_revision == 5


def test_the_views_routing_table_follows_the_bindings_and_a_restored_snapshot() -> None:
    app = MetadataApp(lambda: None)
    view = MetadataView(app)
    app.state.apply(Declare("q", {}, ("n1",), 0))
    app.state.apply(declare("x", "fanout"))

    def routed() -> frozenset[str]:
        return view.routing_table.route(V, "x", "", {}, b"", lambda queue: True)

    assert routed() == frozenset()
    assert view.routing_table is view.routing_table  # built once per revision
    app.state.apply(to_queue("x", "q"))
    assert routed() == {"q"}
    app.restore(encode_snapshot(MetadataMachine()))
    assert routed() == frozenset()
    assert view.routing_table.route(V, "amq.fanout", "", {}, b"", lambda queue: True) == frozenset()


class ApplyingHost:
    """A metadata leader's Raft host that applies each proposal to `state` at once."""

    node = "a"

    def __init__(self) -> None:
        self.state = MetadataMachine()

    def submit(self, gid: str, op: Any) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_result(self.state.apply(decode(op)))
        return future

    def leader_of(self, gid: str) -> str | None:
        return self.node

    def send_control(self, peer: str, control: dict[str, Any]) -> bool:
        return False


async def test_the_door_proposes_exchanges_and_bindings_once_every_node_reads_version_4() -> None:
    host = ApplyingHost()
    formats = FormatVersions("a", lambda: ("a", "b"), lambda peer: True)
    door = MetadataDoor(host, "meta", formats)
    formats.on_control("b", {"metadata_codec": EXCHANGE_CODEC_VERSION - 1})
    with pytest.raises(ValueError, match="cannot be written"):
        await door.declare_exchange(V, "x", "direct", True, False, False, {})
    formats.on_control("b", {"metadata_codec": EXCHANGE_CODEC_VERSION})
    assert await door.declare_exchange(V, "x", "direct", True, False, False, {}) == Created()
    host.state.apply(Declare("q", {}, ("a",), 0))
    binding = BindingRecord(V, "x", "q", QUEUE_DESTINATION, "k", {"n": 1})
    assert await door.bind(binding) == Created()
    assert list(host.state.bindings.values()) == [binding]
    assert await door.unbind(binding) == Ok()
    assert await door.delete_exchange(V, "x", if_unused=True) == Ok()
    assert host.state.exchanges == {} and host.state.bindings == {}


@pytest.mark.parametrize(
    "arguments",
    [{"h": {1: "a", "b": 2}}, {"h": [{"k": {2: 3}}]}, {"h": b"bytes"}, {"h": {"x", "y"}}],
)
def test_bind_arguments_are_json_values_all_the_way_down(arguments: dict[str, object]) -> None:
    """A binding's arguments are digested into its key by every replica: a map with keys that are not
    text at any depth (which no JSON digest sorts), or a value JSON has no form for, is refused when the
    command is made, so it never reaches the log, where every replica would fail on it."""
    with pytest.raises(InvalidCommand):
        Bind("/", "x", "q", "queue", "", arguments)
    with pytest.raises(InvalidCommand):
        Unbind("/", "x", "q", "queue", "", arguments)
    with pytest.raises(InvalidCommand):
        DeclareExchange("/", "x", "direct", True, False, False, arguments)


def test_routing_arguments_nested_past_the_limit_are_refused() -> None:
    """Review finding (deep arguments): an exchange declared with arguments nested hundreds of levels deep
    passed every check, and each node then failed making its metadata snapshot (a recursion past
    Python's limit), again after every restart. Arguments deeper than MAX_ARGUMENT_DEPTH, or holding
    more than MAX_ARGUMENT_VALUES values, are refused when the command is made; at the limit, the
    snapshot round trip works."""
    deep: object = "x"
    for _ in range(MAX_ARGUMENT_DEPTH - 2):
        deep = {"a": deep}
    at_limit = {"nested": deep}  # the arguments, and 14 maps in them, and "x": 16 deep
    with pytest.raises(InvalidCommand, match="deep"):
        DeclareExchange("/", "x", "direct", True, False, False, {"too": at_limit})
    with pytest.raises(InvalidCommand, match="values"):
        Bind("/", "x", "q", "queue", "", {"many": list(range(MAX_ARGUMENT_VALUES))})
    machine = MetadataMachine()
    machine.apply(DeclareExchange("/", "x", "direct", True, False, False, at_limit))
    assert decode_snapshot(encode_snapshot(machine)).exchanges == machine.exchanges
