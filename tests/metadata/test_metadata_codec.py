"""The metadata codec: every version round trips, every version-0 raw list older code wrote still decodes
to the same command, and nothing but MetadataDecodeError comes out of a malformed value."""

from __future__ import annotations

import contextlib

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st
from metadata_strategies import commands

from metadata_state.codec import (
    CODEC_VERSION,
    EXCHANGE_CODEC_VERSION,
    OPERATOR_POLICY_CODEC_VERSION,
    POLICY_CODEC_VERSION,
    VHOST_CODEC_VERSION,
    MetadataDecodeError,
    decode,
    encode,
)
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

VERSIONS = st.sampled_from(range(CODEC_VERSION + 1))
EXCHANGE_COMMANDS = (
    DeclareExchange("/", "logs", "topic", True, False, False, {"alternate-exchange": "spill"}),
    DeleteExchange("/", "logs", if_unused=True),
    Bind("/", "logs", "errors", "queue", "*.error", {}),
    Unbind("/", "logs", "audit", "exchange", "", {"x-match": "any", "level": "error"}),
)


def through_msgpack(value: object) -> object:
    return msgpack.unpackb(msgpack.packb(value), raw=False)


def _first_version(command: Command) -> int:
    """The first codec version that can write `command`."""
    if isinstance(command, DeclareVhost | DeleteVhost | ClearPermissions):
        return VHOST_CODEC_VERSION
    if isinstance(command, SetPolicy | ClearPolicy | SetPermissions) and command.vhost != "/":
        return VHOST_CODEC_VERSION
    if isinstance(command, SetPolicy | ClearPolicy):
        return OPERATOR_POLICY_CODEC_VERSION if command.operator else POLICY_CODEC_VERSION
    if isinstance(command, DeclareExchange | DeleteExchange | Bind | Unbind):
        return EXCHANGE_CODEC_VERSION
    return 0


@given(commands, VERSIONS)
def test_every_command_survives_an_encode_decode_round_trip_in_each_version(
    command: Command, version: int
) -> None:
    if version < _first_version(command):
        with pytest.raises(ValueError, match="cannot be written"):
            encode(command, version)
        return
    assert decode(through_msgpack(encode(command, version))) == command


@given(commands, VERSIONS, st.sampled_from(range(1, CODEC_VERSION + 1)))
def test_a_build_reads_the_versions_up_to_its_own_and_refuses_later_ones(
    command: Command, version: int, reads: int
) -> None:
    """An older build's metadata halts at a command of a later codec version instead of misreading it
    (the whole-node simulation rolls nodes back to a build reading version 1)."""
    if version < _first_version(command):
        return
    written = through_msgpack(encode(command, version))
    if version > reads:
        with pytest.raises(MetadataDecodeError, match=f"this node reads up to {reads}"):
            decode(written, reads)
    else:
        assert decode(written, reads) == command


def test_new_commands_are_written_as_a_version_tag_and_named_fields() -> None:
    assert CODEC_VERSION == 5
    assert encode(SetMembers("q", "q1.q", ("a", "b"), (3, 1))) == [
        5,
        "set_members",
        {"queue": "q", "group": "q1.q", "members": ["a", "b"], "fence": [3, 1]},
    ]
    assert encode(ClearPolicy("p")) == [
        5,
        "clear_policy",
        {"policy": "p", "operator": False, "vhost": "/"},
    ]
    assert encode(ClearPolicy("p"), 4) == [4, "clear_policy", {"policy": "p", "operator": False}]
    assert encode(ClearPolicy("p"), 2) == [2, "clear_policy", {"policy": "p"}]
    assert encode(DeleteExchange("/", "logs")) == [
        5,
        "delete_exchange",
        {"vhost": "/", "exchange": "logs", "if_unused": False},
    ]


def test_rule_an_operator_policy_is_only_of_version_3_so_older_nodes_never_get_one() -> None:
    operator = SetPolicy("cap", ".*", {"max-length": 10}, 0, operator=True)
    for version in (0, 1, 2):
        with pytest.raises(ValueError, match="cannot be written"):
            encode(operator, version)
    written = through_msgpack(encode(operator))
    assert decode(written) == operator
    with pytest.raises(MetadataDecodeError, match="this node reads up to 2"):
        decode(written, 2)
    with pytest.raises(MetadataDecodeError, match="no fields"):  # a version-2 form with the field: refused
        decode([2, "clear_policy", {"policy": "p", "operator": True}])


@pytest.mark.parametrize("command", EXCHANGE_COMMANDS, ids=lambda c: type(c).__name__)
def test_rule_an_exchange_or_binding_command_is_only_of_version_4_so_older_nodes_never_get_one(
    command: Command,
) -> None:
    version, tag, named = encode(command, EXCHANGE_CODEC_VERSION)
    assert decode(through_msgpack([version, tag, named])) == command
    for older in range(EXCHANGE_CODEC_VERSION):
        with pytest.raises(ValueError, match="cannot be written"):
            encode(command, older)
    with pytest.raises(MetadataDecodeError, match="this node reads up to 3"):
        decode([version, tag, named], 3)
    for older in (3, 1):  # an older version's form of it: refused, not misread
        with pytest.raises(MetadataDecodeError, match="not a command of metadata codec version"):
            decode([older, tag, named])
    with pytest.raises(MetadataDecodeError, match="not a command of metadata codec version 0"):
        decode([tag, *named.values()])


def test_rule_a_policy_command_is_only_of_version_2_so_older_nodes_never_get_one() -> None:
    for older in ([1, "clear_policy", {"policy": "p"}], ["clear_policy", "p"]):
        with pytest.raises(MetadataDecodeError, match="not a command of metadata codec version"):
            decode(older)


# Every form the raw-list code (before versions) wrote: Node.declare, delete, the relays of
# register/set_arguments/expire/set_members, membership's join and forget, the user handlers and the
# bootstrap of the user table; with the short forms of nodes older still.
VERSION_0 = [
    (["register_node", "n1", "http://h:1", "h:2", "inc"], RegisterNode("n1", "http://h:1", "h:2", "inc")),
    (["register_node", "n1", "http://h:1", "h:2"], RegisterNode("n1", "http://h:1", "h:2", "")),
    (["forget_node", "n1"], ForgetNode("n1")),
    (
        ["declare", "q", {"x-max-length": 5}, ["n1", "n2"], 1700000000000],
        Declare("q", {"x-max-length": 5}, ("n1", "n2"), 1700000000000),
    ),
    (["delete", "q", "q1.q"], Delete("q", "q1.q")),
    (["set_members", "q", "q1.q", ["n1"], [2, 7]], SetMembers("q", "q1.q", ("n1",), (2, 7))),
    (["set_members", "q", "q1.q", ["n1"]], SetMembers("q", "q1.q", ("n1",), (0, 0))),
    (["set_members", "q", "q1.q", ["n1"], None], SetMembers("q", "q1.q", ("n1",), (0, 0))),
    (["set_arguments", "q", "q1.q", {"x-max-length": 9}], SetArguments("q", "q1.q", {"x-max-length": 9})),
    (["bootstrap_users", "admin", "scrypt$..."], BootstrapUsers("admin", "scrypt$...")),
    (["bootstrap_users", "", ""], BootstrapUsers("", "")),
    (["put_user", "alice", "scrypt$...", ["monitoring"]], PutUser("alice", "scrypt$...", ("monitoring",))),
    (["put_user", "alice", "", []], PutUser("alice", "", ())),
    (["delete_user", "bob"], DeleteUser("bob")),
    (["set_permissions", "alice", "^a$", "", ".*"], SetPermissions("alice", "^a$", "", ".*")),
]


@pytest.mark.parametrize(("raw", "command"), VERSION_0, ids=[str(raw[0]) for raw, _ in VERSION_0])
def test_every_version_0_raw_list_decodes_to_the_same_command(raw: list[object], command: Command) -> None:
    assert decode(through_msgpack(raw)) == command


def test_a_version_1_entry_without_a_field_that_has_a_default_takes_the_default() -> None:
    assert decode([1, "register_node", {"node": "n", "http": "h", "raft": "r"}]) == RegisterNode(
        "n", "h", "r"
    )
    assert decode([1, "set_members", {"queue": "q", "group": "g", "members": []}]).fence == (0, 0)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "value",
    [
        [],
        "declare",
        ["no_such_command", "x"],
        ["delete", "q"],  # a field missing
        ["delete", "q", "g", "extra"],  # one too many
        ["forget_node", 7],
        ["declare", "q", {}, ["a"], "soon"],
        ["declare", "q", {1: 2}, ["a"], 1],
        ["put_user", "alice", "h", "monitoring"],
        [CODEC_VERSION + 1, "delete", {"queue": "q", "group": "g"}],  # a later version
        [1, "delete", {"queue": "q", "group": "g", "why": "later field"}],
        [1, "delete", ["q", "g"]],
        [1, "delete"],
        [True, "delete", {"queue": "q", "group": "g"}],
    ],
)
def test_a_malformed_value_is_refused_with_the_codecs_error(value: object) -> None:
    with pytest.raises(MetadataDecodeError):
        decode(value)


wire_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.text(max_size=5)
    | st.binary(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
TAGS = st.sampled_from(
    [
        "register_node",
        "declare",
        "set_members",
        "put_user",
        "set_permissions",
        "bind",
        "declare_exchange",
        "x",
    ]
)


@given(
    st.one_of(wire_values, st.tuples(TAGS, st.lists(wire_values, max_size=5)).map(lambda t: [t[0], *t[1]]))
)
def test_decoding_any_value_raises_only_metadata_decode_error(value: object) -> None:
    with contextlib.suppress(MetadataDecodeError):
        decode(value)


@given(
    TAGS,
    st.dictionaries(
        st.sampled_from(["queue", "group", "members", "fence", "node", "vhost", "source", "arguments", "x"]),
        wire_values,
    ),
    VERSIONS.filter(bool),
)
def test_decoding_any_named_fields_raises_only_metadata_decode_error(
    tag: str, named: dict[str, object], version: int
) -> None:
    with contextlib.suppress(MetadataDecodeError):
        decode([version, tag, named])
